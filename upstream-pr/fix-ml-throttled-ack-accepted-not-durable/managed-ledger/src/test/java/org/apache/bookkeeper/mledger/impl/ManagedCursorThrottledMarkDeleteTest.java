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

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.Position;
import org.testng.annotations.Test;

/**
 * The mark-delete rate limiter (#26484) reported a throttled ack complete although nothing was written,
 * and a crash then lost it. For the compaction cursor, whose ack names the new compacted ledger, the
 * broker deleted the previous compacted ledger on that completion. Every test checks one rule: a
 * restart after a crash recovers at least every position reported complete.
 */
public class ManagedCursorThrottledMarkDeleteTest extends ManagedCursorAckPathTestBase {
    // So slow that the limiter never grants a second permit during a test.
    static final double NO_PERMIT_RATE = 0.001;
    static final String COMPACTED_LEDGER = "CompactedTopicLedger";

    /** Entries p0..p9 on a cursor whose limiter granted its one permit to markDelete(p1), durable. */
    static final class Throttled {
        final String name;
        final ManagedLedgerConfig config;
        final ManagedCursorImpl cursor;
        final List<Position> p;

        Throttled(ManagedLedgerFactoryImpl factory, String name, String cursorName, double rate,
                  Map<String, Long> properties) throws Exception {
            this.name = name;
            this.config = new ManagedLedgerConfig().setThrottleMarkDelete(rate);
            ManagedLedger ledger = factory.open(name, config);
            this.cursor = (ManagedCursorImpl) ledger.openCursor(cursorName);
            this.p = addEntries(ledger, cursor, 10);
            // An asynchronous mark-delete, as a consumer's ack: the limiter is for those, and a fresh one grants
            // its first request, so this one is written before the test starts.
            Recorded first = new Recorded(cursor);
            cursor.asyncMarkDelete(p.get(1), properties, first, null);
            first.done.get(10, TimeUnit.SECONDS);
        }
    }

    private Throttled throttled(String name, String cursorName, double rate, Map<String, Long> properties)
            throws Exception {
        return new Throttled(factory, name, cursorName, rate, properties);
    }

    private ManagedCursorImpl crash(Throttled t) throws Exception {
        return crashAndRecover(t.name, t.cursor.getName(), t.config);
    }

    @Test(timeOut = 60_000)
    public void testThrottledMarkDeleteIsNotCompleteBeforeItIsPersisted() throws Exception {
        Throttled t = throttled("throttled-mark-delete", "c1", NO_PERMIT_RATE, Map.of());
        Recorded ack = new Recorded(t.cursor);
        t.cursor.asyncMarkDelete(t.p.get(6), ack, null);
        assertEquals(t.cursor.getMarkDeletedPosition(), t.p.get(6), "applied in memory at once");

        ManagedCursorImpl recovered = crash(t);
        assertEquals(recovered.getMarkDeletedPosition(), t.p.get(1), "nothing was written");
        assertFalse(ack.done.isDone(), "so the mark-delete must not be reported complete");
    }

    @Test(timeOut = 60_000)
    public void testThrottledIndividualDeleteIsNotCompleteBeforeItIsPersisted() throws Exception {
        Throttled t = throttled("throttled-delete", "c1", NO_PERMIT_RATE, Map.of());
        Recorded ack = new Recorded(t.cursor);
        t.cursor.asyncDelete(t.p.get(3), ack, null);
        assertTrue(t.cursor.isMessageDeleted(t.p.get(3)), "applied in memory at once");

        assertFalse(crash(t).isMessageDeleted(t.p.get(3)), "nothing was written");
        assertFalse(ack.done.isDone(), "so the delete must not be reported complete");
    }

    /** A close writes the throttled state; the acks complete after that write, not before the close. */
    @Test(timeOut = 60_000)
    public void testCloseCompletesThrottledAcksOnlyAfterPersistingThem() throws Exception {
        Throttled t = throttled("throttled-close", "c1", NO_PERMIT_RATE, Map.of());
        Recorded markDelete = new Recorded(t.cursor);
        Recorded delete = new Recorded(t.cursor);
        t.cursor.asyncMarkDelete(t.p.get(6), markDelete, null);
        t.cursor.asyncDelete(t.p.get(8), delete, null);
        boolean completedBeforeClose = markDelete.done.isDone() || delete.done.isDone();
        t.cursor.close();

        assertFalse(completedBeforeClose, "completed before anything was written");
        markDelete.done.get(10, TimeUnit.SECONDS);
        delete.done.get(10, TimeUnit.SECONDS);
        ManagedCursorImpl recovered = crash(t);
        assertEquals(recovered.getMarkDeletedPosition(), t.p.get(6));
        assertTrue(recovered.isMessageDeleted(t.p.get(8)));
        assertEquals(markDelete.calls.get() + delete.calls.get(), 2);
        assertEquals(markDelete.violations, List.of());
    }

    /**
     * The compactor's ack names the new compacted ledger, and the broker deletes the previous one when the
     * ack completes: complete must mean that a restart finds the new one. The compaction cursor is not
     * throttled (the compactor waits for this ack within its operation timeout), so it completes at once.
     */
    @Test(timeOut = 60_000)
    public void testCompactionCursorReportsTheNewCompactedLedgerOnlyOnceDurable() throws Exception {
        Throttled t = throttled("throttled-compaction", "__compaction", NO_PERMIT_RATE,
                Map.of(COMPACTED_LEDGER, 1L));
        Recorded ack = new Recorded(t.cursor);
        t.cursor.asyncMarkDelete(t.p.get(6), Map.of(COMPACTED_LEDGER, 2L), ack, null);
        ack.done.get(10, TimeUnit.SECONDS);

        ManagedCursorImpl recovered = crash(t);
        assertEquals(recovered.getProperties().get(COMPACTED_LEDGER), Long.valueOf(2),
                "the previous compacted ledger is deleted on completion: a restart must not go back to it");
        assertEquals(recovered.getMarkDeletedPosition(), t.p.get(6));
        assertEquals(ack.violations, List.of());
    }
}
