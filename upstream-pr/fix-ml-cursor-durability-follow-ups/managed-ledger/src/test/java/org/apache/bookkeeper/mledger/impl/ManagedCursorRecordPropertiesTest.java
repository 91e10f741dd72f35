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
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.Position;
import org.testng.annotations.Test;

/**
 * A mark-delete reported complete has its properties durable too: the compaction cursor keeps its compacted
 * ledger in them and deduplication its sequence ids. Upstream completes the mark-delete below with a record
 * that carries older properties; on the accepted-not-durable change alone it is not completed by that record
 * either, so this is a test of this change, not a reproducer against the change below it.
 */
public class ManagedCursorRecordPropertiesTest extends ManagedCursorAckPathTestBase {
    private static final ManagedLedgerConfig THROTTLED = new ManagedLedgerConfig().setThrottleMarkDelete(0.001);

    /**
     * markDelete(p1, {k=1}) is durable; a flush queues a write of p1 behind a read; a throttled
     * markDelete(p6, {k=6}) comes after. The p1 record holds p6 only as an absorbed range, with {k=1}: it
     * must not complete the mark-delete whose properties it lacks.
     */
    @Test(timeOut = 60_000)
    public void testMarkDeleteIsNotCompletedByARecordWithoutItsProperties() throws Exception {
        String name = "properties-absorbed";
        ManagedLedger ledger = factory.open(name, THROTTLED);
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = addEntries(ledger, cursor, 10);
        cursor.markDelete(p.get(1), Map.of("k", 1L));
        Recorded delete = new Recorded(cursor);
        Recorded markDelete = new Recorded(cursor);
        CompletableFuture<Void> read = holdOneRead(cursor);
        cursor.asyncDelete(p.get(5), delete, null);
        cursor.flush();
        cursor.asyncMarkDelete(p.get(6), Map.of("k", 6L), markDelete, null);
        read.complete(null);
        await().atMost(WAIT).until(() -> queued(cursor) == 0 && writesInFlight(cursor) == 0);

        if (markDelete.succeeded()) {
            assertEquals(crashAndRecover(name, "c1", THROTTLED).getProperties(), Map.of("k", 6L),
                    "markDelete(p6, {k=6}) reported complete, its properties lost in a crash");
        }
        cursor.flush();
        await().atMost(WAIT).until(() -> markDelete.done.isDone() && delete.done.isDone());
        assertTrue(markDelete.succeeded());
        assertEquals(crashAndRecover(name, "c1", THROTTLED).getProperties(), Map.of("k", 6L));
        assertEquals(markDelete.violations, List.of());
    }

    /**
     * Two mark-deletes at p6: markDelete(p6, {k=2}) throttled and flushed (the flush's write queued behind a
     * read), then markDelete(p6, {k=6}) throttled. The queued record at p6 carries {k=2}: it must neither
     * complete the second mark-delete nor replace it as the latest state that the next write records.
     */
    @Test(timeOut = 60_000)
    public void testMarkDeleteIsNotCompletedByARecordAtItsPositionWithOlderProperties() throws Exception {
        String name = "properties-one-position";
        ManagedLedger ledger = factory.open(name, THROTTLED);
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = addEntries(ledger, cursor, 10);
        cursor.markDelete(p.get(1), Map.of("k", 1L));
        Recorded first = new Recorded(cursor);
        Recorded second = new Recorded(cursor);
        CompletableFuture<Void> read = holdOneRead(cursor);
        cursor.asyncMarkDelete(p.get(6), Map.of("k", 2L), first, null);
        cursor.flush();
        cursor.asyncMarkDelete(p.get(6), Map.of("k", 6L), second, null);
        read.complete(null);
        await().atMost(WAIT).until(() -> queued(cursor) == 0 && writesInFlight(cursor) == 0);

        if (second.succeeded()) {
            assertEquals(crashAndRecover(name, "c1", THROTTLED).getProperties(), Map.of("k", 6L),
                    "markDelete(p6, {k=6}) reported complete, its properties lost in a crash");
        }
        cursor.flush();
        await().atMost(WAIT).until(() -> first.done.isDone() && second.done.isDone());
        assertTrue(first.succeeded() && second.succeeded());
        assertEquals(crashAndRecover(name, "c1", THROTTLED).getProperties(), Map.of("k", 6L));
        assertEquals(first.violations, List.of());
        assertEquals(second.violations, List.of());
    }
}
