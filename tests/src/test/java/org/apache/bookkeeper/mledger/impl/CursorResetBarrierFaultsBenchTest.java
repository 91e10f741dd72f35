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
package org.apache.bookkeeper.mledger.impl;

import static org.awaitility.Awaitility.await;
import static org.pulsarfork.bench.BenchGroups.UPSTREAM_BUG;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.bookkeeper.client.AddEntryGate;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.Position;
import org.apache.pulsar.metadata.api.MetadataStoreException;
import org.apache.pulsar.metadata.impl.FaultInjectionMetadataStore;
import org.testng.annotations.Test;

/**
 * The other ways upstream reported a reset or an ack done when it was not (#26304): the skip guards,
 * the reset's clear() of the queue, failures and close. Every callback must fire exactly once, off
 * the queue monitor and the cursor lock, and what a crash recovers must match what was reported.
 */
public class CursorResetBarrierFaultsBenchTest extends CursorBenchBase {

    /**
     * A backward reset queued behind a read while an ack's write is in flight: the ack's completion
     * re-arms persistentMarkDeletePosition past the reset, and upstream skipped the reset's write.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void backwardResetIsNotSkippedAfterAnAckReArmsThePersistedPosition() throws Exception {
        ManagedLedger ledger = factory.open("reset-rearm", config());
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = openWithEntries(ledger, cursor, 10);
        cursor.markDelete(p.get(4));
        CallbackProbe probe = new CallbackProbe(cursor);
        CallbackProbe.Outcome ack = probe.newOutcome("ack");
        CallbackProbe.Outcome reset = probe.newOutcome("reset");

        CompletableFuture<Void> ackWrite = AddEntryGate.holdNextAdd(bkc);
        cursor.asyncDelete(p.get(5), probe.delete(ack), null);
        await().atMost(WAIT).until(() -> writesInFlight(cursor) == 1);
        CompletableFuture<Void> read = holdOneRead(cursor);
        cursor.asyncResetCursor(p.get(0), false, probe.reset(reset));
        await().atMost(WAIT).until(() -> queued(cursor) == 1);
        ackWrite.complete(null);
        ack.future.get();
        read.complete(null);

        reset.future.get();
        Position expected = ledger.getPreviousPosition(p.get(0));
        assertEquals(cursor.getReadPosition(), p.get(0));
        assertEquals(cursor.getMarkDeletedPosition(), expected);
        assertEquals(probe.violations, List.of());
        ManagedCursorImpl recovered = crashAndRecover("reset-rearm", "c1");
        assertEquals(recovered.getMarkDeletedPosition(), expected, "the reset reported done must be durable");
    }

    /**
     * An ack queued (read in flight) while the reset's write is in flight: upstream's reset completion
     * cleared the queue, and the ack's callback never fired.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void ackQueuedWhileResetWriteIsInFlightFiresOnce() throws Exception {
        ManagedLedger ledger = factory.open("ack-behind-reset", config());
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = openWithEntries(ledger, cursor, 10);
        cursor.markDelete(p.get(4));
        CallbackProbe probe = new CallbackProbe(cursor);
        CallbackProbe.Outcome ack = probe.newOutcome("ack");
        CallbackProbe.Outcome reset = probe.newOutcome("reset");

        CompletableFuture<Void> resetWrite = AddEntryGate.holdNextAdd(bkc);
        cursor.asyncResetCursor(p.get(0), false, probe.reset(reset));
        await().atMost(WAIT).until(() -> writesInFlight(cursor) == 1);
        CompletableFuture<Void> read = holdOneRead(cursor);
        cursor.asyncDelete(p.get(7), probe.delete(ack), null);
        await().atMost(WAIT).until(() -> queued(cursor) == 1);
        resetWrite.complete(null);
        reset.future.get();
        read.complete(null);

        await().atMost(WAIT).until(() -> ack.future.isDone());
        assertTrue(ack.succeeded(), "ordered before the reset, superseded by its durable write");
        assertFalse(cursor.isMessageDeleted(p.get(7)), "reset wins");
        assertEquals(probe.violations, List.of());
        ManagedCursorImpl recovered = crashAndRecover("ack-behind-reset", "c1");
        assertEquals(recovered.getMarkDeletedPosition(), ledger.getPreviousPosition(p.get(0)));
        assertFalse(recovered.isMessageDeleted(p.get(7)));
        assertEquals(ack.calls.get(), 1);
    }

    /**
     * The reset's write fails (bookie and metadata-store fallback): the reset reports failure and
     * changes nothing; the ack queued with it is persisted or fails, and recovery matches.
     */
    @Test(timeOut = 60_000)
    public void failedResetWriteChangesNothingAndSettlesTheAckBehindIt() throws Exception {
        ManagedLedger ledger = factory.open("reset-write-fails", config());
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = openWithEntries(ledger, cursor, 10);
        cursor.markDelete(p.get(4));
        Position readBefore = cursor.getReadPosition();
        CallbackProbe probe = new CallbackProbe(cursor);
        CallbackProbe.Outcome ack = probe.newOutcome("ack");
        CallbackProbe.Outcome reset = probe.newOutcome("reset");

        CompletableFuture<Void> read = holdOneRead(cursor);
        cursor.asyncResetCursor(p.get(0), false, probe.reset(reset));
        await().atMost(WAIT).until(() -> queued(cursor) == 1);
        cursor.asyncDelete(p.get(5), probe.delete(ack), null);
        await().atMost(WAIT).until(() -> queued(cursor) == 2);
        bkc.addEntryFailAfter(0, BKException.Code.NotEnoughBookiesException);
        AtomicBoolean metadataFailureUsed = new AtomicBoolean();
        metadataStore.failConditional(new MetadataStoreException.BadVersionException("test: cursor write fails"),
                (op, path) -> op == FaultInjectionMetadataStore.OperationType.PUT && path.endsWith("/c1")
                        && metadataFailureUsed.compareAndSet(false, true));
        read.complete(null);

        await().atMost(WAIT).until(() -> reset.future.isDone() && ack.future.isDone());
        assertFalse(reset.succeeded(), "nothing persisted the reset");
        assertEquals(cursor.getReadPosition().compareTo(p.get(0)) > 0, true, "the reset changed nothing");
        assertTrue(readBefore.compareTo(p.get(0)) > 0);
        assertEquals(probe.violations, List.of());
        Position recovered = crashAndRecover("reset-write-fails", "c1").getMarkDeletedPosition();
        if (ack.succeeded()) {
            assertTrue(recovered.compareTo(p.get(5)) >= 0, "an ack reported durable is recovered: " + recovered);
        } else {
            assertTrue(recovered.compareTo(p.get(0)) >= 0, "a failed reset is never recovered: " + recovered);
        }
    }

    /**
     * The cursor ledger cannot be created (metadata-store error): every queued callback fails once,
     * and none runs under the pendingMarkDeleteOps monitor (upstream failed them while holding it).
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void metadataErrorOnCursorLedgerCreationFailsQueuedOperationsOffTheMonitor() throws Exception {
        ManagedLedger ledger = factory.open("create-fails", config());
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = openWithEntries(ledger, cursor, 10);
        cursor.markDelete(p.get(4));
        ManagedCursorImpl recovering = crashAndRecover("create-fails", "c1");
        CallbackProbe probe = new CallbackProbe(recovering);
        CallbackProbe.Outcome ack = probe.newOutcome("ack");
        CallbackProbe.Outcome reset = probe.newOutcome("reset");

        CompletableFuture<Void> createGate = bkc.promiseAfter(0);
        recovering.asyncResetCursor(p.get(0), false, probe.reset(reset));
        await().atMost(WAIT).until(() -> queued(recovering) == 1);
        recovering.asyncDelete(p.get(5), probe.delete(ack), null);
        await().atMost(WAIT).until(() -> queued(recovering) == 2);
        AtomicBoolean used = new AtomicBoolean();
        metadataStore.failConditional(new MetadataStoreException.BadVersionException("test: cursor update fails"),
                (op, path) -> op == FaultInjectionMetadataStore.OperationType.PUT && path.endsWith("/c1")
                        && used.compareAndSet(false, true));
        createGate.complete(null);

        await().atMost(WAIT).until(() -> reset.future.isDone() && ack.future.isDone());
        assertFalse(reset.succeeded());
        assertEquals(probe.violations, List.of());
        assertEquals(reset.calls.get(), 1);
        assertEquals(ack.calls.get(), 1);
        Position recovered = crashAndRecover("create-fails", "c1").getMarkDeletedPosition();
        assertTrue(recovered.compareTo(p.get(0)) >= 0, "the failed reset is not recovered: " + recovered);
    }

    /**
     * The cursor closes with a reset and an ack queued behind a read: upstream left both callbacks
     * unfired. The ack settles with the close's write, the reset fails, and recovery matches.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void closeFiresEveryQueuedCallbackOnce() throws Exception {
        ManagedLedger ledger = factory.open("close-queued", config());
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = openWithEntries(ledger, cursor, 10);
        cursor.markDelete(p.get(4));
        CallbackProbe probe = new CallbackProbe(cursor);
        CallbackProbe.Outcome ack = probe.newOutcome("ack");
        CallbackProbe.Outcome reset = probe.newOutcome("reset");

        CompletableFuture<Void> read = holdOneRead(cursor);
        cursor.asyncDelete(p.get(5), probe.delete(ack), null);
        await().atMost(WAIT).until(() -> queued(cursor) == 1);
        cursor.asyncResetCursor(p.get(0), false, probe.reset(reset));
        await().atMost(WAIT).until(() -> queued(cursor) == 2);
        cursor.close();
        read.complete(null);

        await().atMost(WAIT).until(() -> reset.future.isDone() && ack.future.isDone());
        assertFalse(reset.succeeded(), "the cursor closed before the reset was persisted");
        assertTrue(ack.succeeded(), "the close persisted the ack's state");
        assertEquals(probe.violations, List.of());
        ManagedCursorImpl recovered = crashAndRecover("close-queued", "c1");
        assertEquals(recovered.getMarkDeletedPosition(), p.get(5));
    }
}
