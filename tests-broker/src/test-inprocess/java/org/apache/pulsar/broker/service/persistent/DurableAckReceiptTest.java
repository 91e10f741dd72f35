/*
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *   http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing,
 * software distributed under the License is distributed on an
 * "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
 * KIND, either express or implied.  See the License for the
 * specific language governing permissions and limitations
 * under the License.
 */
package org.apache.pulsar.broker.service.persistent;

import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertSame;
import static org.testng.Assert.assertTrue;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.apache.bookkeeper.mledger.AsyncCallbacks.DeleteCallback;
import org.apache.bookkeeper.mledger.AsyncCallbacks.MarkDeleteCallback;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.pulsar.broker.service.BrokerServiceException;
import org.apache.pulsar.common.api.proto.ServerError;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/** The receipt of one ack that waits for persistence, on its own: its order with the shared callback, its errors. */
@Test(groups = FORK_ONLY)
public class DurableAckReceiptTest {
    private List<String> calls;
    private CompletableFuture<Void> receipt;
    private DurableAckReceipt callback;

    @BeforeMethod
    public void newReceipt() {
        calls = new ArrayList<>();
        receipt = new CompletableFuture<>();
        callback = new DurableAckReceipt(new MarkDeleteCallback() {
            @Override
            public void markDeleteAccepted(Object ctx) {
                calls.add("markDeleteAccepted " + receipt.isDone());
            }

            @Override
            public void markDeleteComplete(Object ctx) {
                calls.add("markDeleteComplete " + receipt.isDone());
            }

            @Override
            public void markDeleteFailed(ManagedLedgerException exception, Object ctx) {
                calls.add("markDeleteFailed " + receipt.isDone());
            }
        }, new DeleteCallback() {
            @Override
            public void deleteAccepted(Object ctx) {
                calls.add("deleteAccepted " + receipt.isDone());
            }

            @Override
            public void deleteComplete(Object ctx) {
                calls.add("deleteComplete " + receipt.isDone());
                throw new IllegalStateException("the shared callback failed");
            }

            @Override
            public void deleteFailed(ManagedLedgerException exception, Object ctx) {
                calls.add("deleteFailed " + receipt.isDone());
            }
        }, receipt);
    }

    public void anAcceptedAckIsNotReceiptedItsDurableCompletionIs() {
        callback.markDeleteAccepted(null);
        assertFalse(receipt.isDone(), "applied in memory, not durable");
        callback.markDeleteComplete(null);
        assertTrue(receipt.isDone() && !receipt.isCompletedExceptionally());
        assertEquals(calls, List.of("markDeleteAccepted false", "markDeleteComplete false"),
                "the shared callback's work comes before the receipt");
    }

    public void theReceiptCompletesWhenTheSharedCallbackThrows() {
        callback.deleteAccepted(null);
        try {
            callback.deleteComplete(null);
        } catch (IllegalStateException expected) {
            // The cursor's own handling of a callback that throws; the receipt is answered all the same.
        }
        assertTrue(receipt.isDone() && !receipt.isCompletedExceptionally());
    }

    public void aClosedOrFencedCursorAnswersServiceNotReady() {
        for (ManagedLedgerException cause : List.of(
                new ManagedLedgerException.CursorAlreadyClosedException("closed"),
                new ManagedLedgerException.ManagedLedgerFencedException(),
                new ManagedLedgerException.BadVersionException("fenced by the new owner"))) {
            BrokerServiceException error = DurableAckReceipt.notPersisted(cause);
            assertEquals(BrokerServiceException.getClientErrorCode(new CompletionException(error)),
                    ServerError.ServiceNotReady, cause.toString());
            assertTrue(error.getMessage().startsWith("Ack not persisted: "), error.getMessage());
        }
    }

    public void anyOtherWriteFailureAnswersPersistenceError() {
        ManagedLedgerException cause = new ManagedLedgerException("bookies unavailable");
        callback.deleteFailed(cause, null);
        assertEquals(calls, List.of("deleteFailed false"));
        Throwable error = receipt.handle((v, e) -> e).join();
        assertEquals(BrokerServiceException.getClientErrorCode(new CompletionException(error)),
                ServerError.PersistenceError);
        assertEquals(error.getMessage(), "Ack not persisted: bookies unavailable");
        assertSame(error.getCause(), cause, "the write's failure, for the broker's log");
    }
}
