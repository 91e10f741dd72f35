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

import static org.pulsarfork.bench.BenchGroups.UPSTREAM_BUG;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import com.google.common.util.concurrent.ForwardingExecutorService;
import com.google.common.util.concurrent.MoreExecutors;
import java.lang.reflect.Field;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.bookkeeper.client.PulsarMockBookKeeper;
import org.apache.bookkeeper.client.PulsarMockLedgerHandle;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.Position;
import org.testng.annotations.Test;

/**
 * One cursor-ledger switch creates one cursor ledger. Found by the JMH benchmark, whose mock bookie answers
 * at once: in about one of three fresh cursors, on either jar, the write that a new cursor ledger's creation
 * flushes completed before the creation had set the cursor open, saw it still switching with nothing in
 * flight, and started a second creation. The second one writes its first record while the cursor writes
 * to the first ledger (in the benchmark: an IndexOutOfBoundsException from the shared PositionInfo, and
 * BadVersion when the ledger closed), then switches to a ledger whose first record predates those writes.
 */
public class CursorLedgerCreationBenchTest extends CursorBenchBase {

    /**
     * A cursor without a cursor ledger (as opened) creates one for its first mark-delete, and flushes that
     * mark-delete into it. With the mock bookie answering inside the add call, the flushed write completes
     * before the flush returns: deterministically what a fast bookie does now and then. Upstream then starts
     * a second cursor ledger; ours, whose completion of that write runs off the queue monitor, would only
     * race it, so the test also checks the cause: the cursor is open before the flushed write is issued.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aWriteFlushedByANewCursorLedgerDoesNotStartAnother() throws Exception {
        ManagedLedger ledger = factory.open("one-cursor-ledger", config());
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = openWithEntries(ledger, cursor, 10);
        long before = ledgersCreated();

        // The state the cursor is in whenever the bookie works for a cursor ledger that has its first record:
        // the flushed write is issued by then, and must be issued to an open cursor.
        List<String> statesAfterFirstRecord = new CopyOnWriteArrayList<>();
        ExecutorService inline = new ForwardingExecutorService() {
            private final ExecutorService direct = MoreExecutors.newDirectExecutorService();

            @Override
            protected ExecutorService delegate() {
                return direct;
            }

            @Override
            public void execute(Runnable task) {
                PulsarMockLedgerHandle cursorLedger = bkc.getLedgerMap().get(cursor.getCursorLedger());
                if (cursorLedger != null && cursorLedger.getLastAddConfirmed() >= 0) {
                    statesAfterFirstRecord.add(cursor.getState());
                }
                direct.execute(task);
            }
        };
        ExecutorService bookie = bookieExecutor(inline);
        try {
            cursor.markDelete(p.get(3));
        } finally {
            bookieExecutor(bookie);
        }
        assertEquals(ledgersCreated() - before, 1, "cursor ledgers created for the cursor's first write");
        assertFalse(statesAfterFirstRecord.isEmpty(), "the flushed write went through the bookie");
        assertEquals(new HashSet<>(statesAfterFirstRecord), Set.of("Open"),
                "the cursor's state while its new ledger takes the flushed write");

        cursor.markDelete(p.get(6));
        assertEquals(ledgersCreated() - before, 1, "cursor ledgers created");
        assertEquals(crashAndRecover("one-cursor-ledger", "c1").getMarkDeletedPosition(), p.get(6));
    }

    // Ledger ids the mock has handed out: one per ledger created.
    private long ledgersCreated() throws Exception {
        return ((AtomicLong) mockField("sequence").get(bkc)).get();
    }

    // The executor the mock bookie completes creations and adds on; returns the previous one.
    private ExecutorService bookieExecutor(ExecutorService executor) throws Exception {
        Field f = mockField("executor");
        ExecutorService previous = (ExecutorService) f.get(bkc);
        f.set(bkc, executor);
        return previous;
    }

    private static Field mockField(String name) throws Exception {
        Field f = PulsarMockBookKeeper.class.getDeclaredField(name);
        f.setAccessible(true);
        return f;
    }
}
