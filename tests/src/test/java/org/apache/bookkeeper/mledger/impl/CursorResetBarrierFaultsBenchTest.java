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
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.bookkeeper.client.AddEntryGate;
import org.apache.bookkeeper.client.BKException;
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
     * For a callback whose operation is over: on the mock bookie it fires within milliseconds; upstream's never
     * fires in two of these tests, and its run waits this bound out.
     */
    private static final Duration CALLBACK = Duration.ofSeconds(3);

    /**
     * A backward reset queued behind a read while an ack's write is in flight: the ack's completion
     * re-arms persistentMarkDeletePosition past the reset, and upstream skipped the reset's write.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void backwardResetIsNotSkippedAfterAnAckReArmsThePersistedPosition() throws Exception {
        Scenario s = new Scenario("reset-rearm", false);
        CompletableFuture<Void> ackWrite = AddEntryGate.holdNextAdd(bkc);
        s.cursor.asyncDelete(s.p.get(5), s.probe.delete(s.ack), null);
        await().atMost(WAIT).until(() -> writesInFlight(s.cursor) == 1);
        CompletableFuture<Void> read = holdOneRead(s.cursor);
        s.cursor.asyncResetCursor(s.p.get(0), false, s.probe.reset(s.reset));
        await().atMost(WAIT).until(() -> queued(s.cursor) == 1);
        ackWrite.complete(null);
        s.ack.future.get();
        read.complete(null);

        s.reset.future.get();
        assertEquals(s.cursor.getReadPosition(), s.p.get(0));
        assertEquals(s.cursor.getMarkDeletedPosition(), s.beforeFirst());
        assertEquals(s.probe.violations, List.of());
        assertEquals(s.crash().getMarkDeletedPosition(), s.beforeFirst(), "the reset reported done must be durable");
    }

    /**
     * An ack queued (read in flight) while the reset's write is in flight: upstream's reset completion
     * cleared the queue, and the ack's callback never fired.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void ackQueuedWhileResetWriteIsInFlightFiresOnce() throws Exception {
        Scenario s = new Scenario("ack-behind-reset", false);
        CompletableFuture<Void> resetWrite = AddEntryGate.holdNextAdd(bkc);
        s.cursor.asyncResetCursor(s.p.get(0), false, s.probe.reset(s.reset));
        await().atMost(WAIT).until(() -> writesInFlight(s.cursor) == 1);
        CompletableFuture<Void> read = holdOneRead(s.cursor);
        s.cursor.asyncDelete(s.p.get(7), s.probe.delete(s.ack), null);
        await().atMost(WAIT).until(() -> queued(s.cursor) == 1);
        resetWrite.complete(null);
        s.reset.future.get();
        read.complete(null);

        await().atMost(CALLBACK).until(() -> s.ack.future.isDone());
        assertTrue(s.ack.succeeded(), "ordered before the reset, superseded by its durable write");
        assertFalse(s.cursor.isMessageDeleted(s.p.get(7)), "reset wins");
        assertEquals(s.probe.violations, List.of());
        ManagedCursorImpl recovered = s.crash();
        assertEquals(recovered.getMarkDeletedPosition(), s.beforeFirst());
        assertFalse(recovered.isMessageDeleted(s.p.get(7)));
        assertEquals(s.ack.calls.get(), 1);
    }

    /**
     * The reset's write fails (bookie and metadata-store fallback): the reset reports failure and
     * changes nothing; the ack queued with it is persisted or fails, and recovery matches.
     */
    @Test(timeOut = 60_000)
    public void failedResetWriteChangesNothingAndSettlesTheAckBehindIt() throws Exception {
        Scenario s = new Scenario("reset-write-fails", false);
        CompletableFuture<Void> read = holdOneRead(s.cursor);
        s.cursor.asyncResetCursor(s.p.get(0), false, s.probe.reset(s.reset));
        await().atMost(WAIT).until(() -> queued(s.cursor) == 1);
        s.cursor.asyncDelete(s.p.get(5), s.probe.delete(s.ack), null);
        await().atMost(WAIT).until(() -> queued(s.cursor) == 2);
        bkc.addEntryFailAfter(0, BKException.Code.NotEnoughBookiesException);
        failNextCursorUpdate("test: cursor write fails");
        read.complete(null);

        await().atMost(WAIT).until(() -> s.reset.future.isDone() && s.ack.future.isDone());
        assertFalse(s.reset.succeeded(), "nothing persisted the reset");
        assertTrue(s.cursor.getReadPosition().compareTo(s.p.get(0)) > 0, "the reset changed nothing");
        assertEquals(s.probe.violations, List.of());
        Position recovered = s.crash().getMarkDeletedPosition();
        if (s.ack.succeeded()) {
            assertTrue(recovered.compareTo(s.p.get(5)) >= 0, "an ack reported durable is recovered: " + recovered);
        } else {
            assertTrue(recovered.compareTo(s.p.get(0)) >= 0, "a failed reset is never recovered: " + recovered);
        }
    }

    /**
     * The cursor ledger cannot be created (metadata-store error): every queued callback fails once,
     * and none runs under the pendingMarkDeleteOps monitor (upstream failed them while holding it).
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void metadataErrorOnCursorLedgerCreationFailsQueuedOperationsOffTheMonitor() throws Exception {
        Scenario s = new Scenario("create-fails", true);
        CompletableFuture<Void> createGate = bkc.promiseAfter(0);
        s.cursor.asyncResetCursor(s.p.get(0), false, s.probe.reset(s.reset));
        await().atMost(WAIT).until(() -> queued(s.cursor) == 1);
        s.cursor.asyncDelete(s.p.get(5), s.probe.delete(s.ack), null);
        await().atMost(WAIT).until(() -> queued(s.cursor) == 2);
        failNextCursorUpdate("test: cursor update fails");
        createGate.complete(null);

        await().atMost(WAIT).until(() -> s.reset.future.isDone() && s.ack.future.isDone());
        assertFalse(s.reset.succeeded());
        assertEquals(s.probe.violations, List.of());
        assertEquals(s.reset.calls.get(), 1);
        assertEquals(s.ack.calls.get(), 1);
        Position recovered = s.crash().getMarkDeletedPosition();
        assertTrue(recovered.compareTo(s.p.get(0)) >= 0, "the failed reset is not recovered: " + recovered);
    }

    /**
     * The cursor closes with a reset and an ack queued behind a read: upstream left both callbacks
     * unfired. The ack settles with the close's write, the reset fails, and recovery matches.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void closeFiresEveryQueuedCallbackOnce() throws Exception {
        Scenario s = new Scenario("close-queued", false);
        CompletableFuture<Void> read = holdOneRead(s.cursor);
        s.cursor.asyncDelete(s.p.get(5), s.probe.delete(s.ack), null);
        await().atMost(WAIT).until(() -> queued(s.cursor) == 1);
        s.cursor.asyncResetCursor(s.p.get(0), false, s.probe.reset(s.reset));
        await().atMost(WAIT).until(() -> queued(s.cursor) == 2);
        s.cursor.close();
        read.complete(null);

        await().atMost(CALLBACK).until(() -> s.reset.future.isDone() && s.ack.future.isDone());
        assertFalse(s.reset.succeeded(), "the cursor closed before the reset was persisted");
        assertTrue(s.ack.succeeded(), "the close persisted the ack's state");
        assertEquals(s.probe.violations, List.of());
        assertEquals(s.crash().getMarkDeletedPosition(), s.p.get(5));
    }

    // Fails the next metadata-store update of cursor c1's position, once.
    private void failNextCursorUpdate(String message) {
        AtomicBoolean used = new AtomicBoolean();
        metadataStore.failConditional(new MetadataStoreException.BadVersionException(message),
                (op, path) -> op == FaultInjectionMetadataStore.OperationType.PUT && path.endsWith("/c1")
                        && used.compareAndSet(false, true));
    }
}
