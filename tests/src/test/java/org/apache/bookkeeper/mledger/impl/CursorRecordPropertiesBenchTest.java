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
import static org.testng.Assert.assertTrue;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Predicate;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.Position;
import org.testng.annotations.Test;

/**
 * A mark-delete reported durable must have its properties durable too: the compaction cursor stores the
 * compacted ledger in them and deduplication its sequence ids. Entries p0..p9; a limiter this slow
 * grants only the first permit.
 */
public class CursorRecordPropertiesBenchTest extends CursorBenchBase {
    private static final double NO_PERMIT_RATE = 0.001;

    /**
     * Entries p0..p9 and markDelete(p1, {k=1}) durable; then a read in flight, a throttled delete(p5) and a
     * flush, which queues a write of p1 behind the read, and a throttled markDelete(p6, {k=6}).
     */
    private final class QueuedBehindRead {
        final String name;
        final ManagedCursorImpl cursor;
        final List<Position> p;
        final CallbackProbe probe;
        final CallbackProbe.Outcome delete;
        final CallbackProbe.Outcome md;
        final CompletableFuture<Void> read;

        QueuedBehindRead(String name) throws Exception {
            this.name = name;
            ManagedLedger ledger = factory.open(name, new ManagedLedgerConfig().setThrottleMarkDelete(NO_PERMIT_RATE));
            this.cursor = (ManagedCursorImpl) ledger.openCursor("c1");
            this.p = openWithEntries(ledger, cursor, 10);
            markDeleteTakingThePermit(cursor, p.get(1), Map.of("k", 1L));
            this.probe = new CallbackProbe(cursor);
            this.delete = probe.newOutcome("delete(p5)");
            this.md = probe.newOutcome("markDelete(p6, {k=6})");
            this.read = holdOneRead(cursor);
            cursor.asyncDelete(p.get(5), probe.delete(delete), null);
            cursor.flush();
            cursor.asyncMarkDelete(p.get(6), Map.of("k", 6L), probe.markDelete(md), null);
        }

        Long recoveredK() throws Exception {
            return crashAndRecover(name, "c1").getProperties().get("k");
        }
    }

    /** Once the read completes and the mark-delete reports durable, a crash must recover {k=6}. */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aMarkDeleteIsNotCompletedByARecordWithoutItsProperties() throws Exception {
        QueuedBehindRead q = new QueuedBehindRead("properties-absorbed");
        q.read.complete(null);
        await().atMost(WAIT).until(() -> queued(q.cursor) == 0 && writesInFlight(q.cursor) == 0);
        if (q.md.succeeded()) {
            assertEquals(q.recoveredK(), Long.valueOf(6L), "markDelete(p6, {k=6}) reported durable");
        }
        q.cursor.flush();
        await().atMost(WAIT).until(() -> q.delete.future.isDone() && q.md.future.isDone());
        assertTrue(q.delete.succeeded() && q.md.succeeded());
        assertEquals(q.recoveredK(), Long.valueOf(6L));
        ManagedCursorImpl afterFlush = crashAndRecover(q.name, "c1");
        for (int i = 0; i <= 6; i++) {
            assertTrue(afterFlush.isMessageDeleted(q.p.get(i)), "p" + i);
        }
        assertEquals(q.probe.violations, List.of());
    }

    /**
     * An individual delete passes no properties and inherits the newest ones: those of markDelete(p3, {k=3}),
     * applied before it, not those of an older write still queued ({k=2}, a flush behind a read). Upstream
     * takes the last queued entry's, which then overwrite the newer ones in the latest state.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aDeleteInheritsThePropertiesOfTheNewestMarkDelete() throws Exception {
        String name = "properties-inherited";
        ManagedLedger ledger = factory.open(name, new ManagedLedgerConfig().setThrottleMarkDelete(NO_PERMIT_RATE));
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = openWithEntries(ledger, cursor, 10);
        markDeleteTakingThePermit(cursor, p.get(1), Map.of("k", 1L));
        CallbackProbe probe = new CallbackProbe(cursor);
        CompletableFuture<Void> read = holdOneRead(cursor);
        cursor.asyncMarkDelete(p.get(2), Map.of("k", 2L), probe.markDelete(probe.newOutcome("markDelete(p2)")), null);
        cursor.flush();
        CallbackProbe.Outcome md3 = probe.newOutcome("markDelete(p3, {k=3})");
        cursor.asyncMarkDelete(p.get(3), Map.of("k", 3L), probe.markDelete(md3), null);
        cursor.asyncDelete(p.get(6), probe.delete(probe.newOutcome("delete(p6)")), null);
        read.complete(null);
        await().atMost(WAIT).until(() -> queued(cursor) == 0 && writesInFlight(cursor) == 0);

        cursor.flush();
        await().atMost(WAIT).until(md3.future::isDone);
        assertTrue(md3.succeeded());
        assertEquals(crashAndRecover(name, "c1").getProperties().get("k"), Long.valueOf(3L),
                "markDelete(p3, {k=3}) reported durable");
        assertEquals(probe.violations, List.of());
    }

    /**
     * Two mark-deletes at p6: markDelete(p6, {k=2}) throttled and flushed (the flush's write queued behind a
     * read), then markDelete(p6, {k=6}) throttled. The queued record is at p6 with {k=2}: it must neither
     * complete markDelete(p6, {k=6}) nor replace it as the latest state that later writes record. Upstream
     * reports both complete at once, and records neither.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aRecordAtAMarkDeletesPositionWithOlderPropertiesDoesNotCompleteIt() throws Exception {
        String name = "properties-one-position";
        ManagedLedger ledger = factory.open(name, new ManagedLedgerConfig().setThrottleMarkDelete(NO_PERMIT_RATE));
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = openWithEntries(ledger, cursor, 10);
        markDeleteTakingThePermit(cursor, p.get(1), Map.of("k", 1L));
        CallbackProbe probe = new CallbackProbe(cursor);
        CompletableFuture<Void> read = holdOneRead(cursor);
        CallbackProbe.Outcome md2 = probe.newOutcome("markDelete(p6, {k=2})");
        cursor.asyncMarkDelete(p.get(6), Map.of("k", 2L), probe.markDelete(md2), null);
        cursor.flush();
        CallbackProbe.Outcome md6 = probe.newOutcome("markDelete(p6, {k=6})");
        cursor.asyncMarkDelete(p.get(6), Map.of("k", 6L), probe.markDelete(md6), null);
        read.complete(null);
        await().atMost(WAIT).until(() -> queued(cursor) == 0 && writesInFlight(cursor) == 0);
        if (md6.succeeded()) {
            assertEquals(crashAndRecover(name, "c1").getProperties().get("k"), Long.valueOf(6L),
                    "markDelete(p6, {k=6}) reported durable");
        }

        cursor.flush();
        await().atMost(WAIT).until(() -> md2.future.isDone() && md6.future.isDone());
        assertTrue(md2.succeeded() && md6.succeeded());
        assertEquals(crashAndRecover(name, "c1").getProperties().get("k"), Long.valueOf(6L));
        assertEquals(probe.violations, List.of());
    }

    /**
     * Closed instead: the close persists the queued ack's position with the properties of the newest
     * mark-delete, which it then reports durable.
     */
    @Test(timeOut = 60_000)
    public void aCloseWritesThePropertiesOfTheNewestMarkDelete() throws Exception {
        QueuedBehindRead q = new QueuedBehindRead("properties-close");
        q.cursor.close();
        await().atMost(WAIT).until(q.md.future::isDone);
        if (q.md.succeeded()) {
            assertEquals(q.recoveredK(), Long.valueOf(6L), "markDelete(p6, {k=6}) reported durable at close");
        }
        assertEquals(q.probe.violations, List.of());
    }

    /**
     * {@code putProperty} and {@code removeProperty} change the latest state in memory; the next ack's record
     * carries the change. A property put after a mark-delete was dated as that mark-delete (the latest state keeps
     * its callback), and a delete then inherited the mark-delete's properties without it.
     */
    @Test(timeOut = 60_000)
    public void aPropertyPutOrRemovedOnTheLatestStateIsWrittenByTheNextAck() throws Exception {
        assertEquals(recordAfterAChangeAndADelete("properties-put", cursor -> cursor.putProperty("x", 7L)),
                Map.of("k", 1L, "x", 7L), "putProperty(x) then delete(p2)");
        assertEquals(recordAfterAChangeAndADelete("properties-remove", cursor -> cursor.removeProperty("k")),
                Map.of(), "removeProperty(k) then delete(p2)");
    }

    private Map<String, Long> recordAfterAChangeAndADelete(String name, Predicate<ManagedCursorImpl> change)
            throws Exception {
        ManagedLedger ledger = factory.open(name, new ManagedLedgerConfig());
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = openWithEntries(ledger, cursor, 10);
        // A mutable map: upstream's 4.0.8 removes a property from the latest state's map in place.
        cursor.markDelete(p.get(1), new HashMap<>(Map.of("k", 1L)));
        assertTrue(change.test(cursor), "the cursor has a latest state to change");
        cursor.delete(p.get(2));
        assertEquals(cursor.getMarkDeletedPosition(), p.get(2));
        return crashAndRecover(name, "c1").getProperties();
    }
}
