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
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.Position;
import org.awaitility.Awaitility;
import org.testng.annotations.Test;

/**
 * A throttled ack is "accepted, not durable" ({@code markDeleteAccepted}/{@code deleteAccepted}) at once
 * and complete once a write that holds it is durable: within one limiter period, at a flush, a close, or
 * a reset's write.
 */
public class ManagedCursorAcceptedNotDurableTest extends ManagedCursorAckPathTestBase {

    /** Records the "accepted" signal too, and that it comes before completion. */
    static final class Accepted extends Recorded {
        final CompletableFuture<Void> accepted = new CompletableFuture<>();

        Accepted(ManagedCursorImpl cursor) {
            super(cursor);
        }

        private void accept() {
            if (!accepted.complete(null) || done.isDone()) {
                violations.add("accepted twice or after completion");
            }
        }

        @Override
        public void markDeleteAccepted(Object ctx) {
            accept();
        }

        @Override
        public void deleteAccepted(Object ctx) {
            accept();
        }
    }

    private ManagedCursorThrottledMarkDeleteTest.Throttled throttled(String name, double rate) throws Exception {
        return new ManagedCursorThrottledMarkDeleteTest.Throttled(factory, name, "c1", rate, Map.of());
    }

    @Test(timeOut = 60_000)
    public void testThrottledAcksAreAcceptedAndDurableAfterAFlush() throws Exception {
        var t = throttled("accepted-flush", ManagedCursorThrottledMarkDeleteTest.NO_PERMIT_RATE);
        Accepted markDelete = new Accepted(t.cursor);
        Accepted delete = new Accepted(t.cursor);
        t.cursor.asyncMarkDelete(t.p.get(5), markDelete, null);
        t.cursor.asyncDelete(t.p.get(8), delete, null);
        assertTrue(markDelete.accepted.isDone() && delete.accepted.isDone(), "accepted at once");
        assertFalse(markDelete.done.isDone() || delete.done.isDone(), "not complete: nothing was written");
        assertEquals(t.cursor.getAcceptedNotDurableCount(), 2);

        t.cursor.flush();
        markDelete.done.get(10, TimeUnit.SECONDS);
        delete.done.get(10, TimeUnit.SECONDS);
        ManagedCursorImpl recovered = crashAndRecover(t.name, "c1", t.config);
        assertEquals(recovered.getMarkDeletedPosition(), t.p.get(5));
        assertTrue(recovered.isMessageDeleted(t.p.get(8)));
        assertEquals(t.cursor.getAcceptedNotDurableCount(), 0);
        assertEquals(markDelete.violations, List.of());
        assertEquals(delete.violations, List.of());
    }

    /** Without a flush the cursor writes the held acks itself, within one limiter period. */
    @Test(timeOut = 60_000)
    public void testThrottledAcksBecomeDurableWithinOneLimiterPeriod() throws Exception {
        var t = throttled("accepted-period", 1.0);
        Accepted markDelete = new Accepted(t.cursor);
        t.cursor.asyncMarkDelete(t.p.get(5), markDelete, null);
        // The limiter's one permit of this second went to markDelete(p1).
        assertTrue(markDelete.accepted.isDone() && !markDelete.done.isDone(), "throttled: accepted, not complete");
        Awaitility.await().atMost(Duration.ofSeconds(6)).until(markDelete.done::isDone);
        assertTrue(markDelete.succeeded());
        assertEquals(crashAndRecover(t.name, "c1", t.config).getMarkDeletedPosition(), t.p.get(5));
    }

    /** "Reset wins": an ack accepted before a reset is ordered before it, and the reset's write completes it. */
    @Test(timeOut = 60_000)
    public void testAResetsWriteCompletesTheAcksAcceptedBeforeIt() throws Exception {
        var t = throttled("accepted-reset", ManagedCursorThrottledMarkDeleteTest.NO_PERMIT_RATE);
        Accepted ack = new Accepted(t.cursor);
        Recorded reset = new Recorded(t.cursor);
        t.cursor.asyncMarkDelete(t.p.get(6), ack, null);
        t.cursor.asyncResetCursor(t.p.get(0), false, reset);
        reset.done.get(10, TimeUnit.SECONDS);
        ack.done.get(10, TimeUnit.SECONDS);

        assertEquals(t.cursor.getAcceptedNotDurableCount(), 0);
        assertEquals(crashAndRecover(t.name, "c1", t.config).getReadPosition(), t.p.get(0));
        assertEquals(ack.violations, List.of());
    }

    /** A non-durable cursor writes nothing: its acks complete at once, throttled or not. */
    @Test(timeOut = 60_000)
    public void testNonDurableCursorCompletesThrottledAcksAtOnce() throws Exception {
        ManagedLedger ledger = factory.open("accepted-non-durable",
                new ManagedLedgerConfig().setThrottleMarkDelete(ManagedCursorThrottledMarkDeleteTest.NO_PERMIT_RATE));
        ManagedCursorImpl durable = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = addEntries(ledger, durable, 10);
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.newNonDurableCursor(p.get(0));
        Accepted first = new Accepted(cursor);
        Accepted second = new Accepted(cursor);
        cursor.asyncMarkDelete(p.get(1), first, null);
        cursor.asyncMarkDelete(p.get(4), second, null);
        first.done.get(10, TimeUnit.SECONDS);
        second.done.get(10, TimeUnit.SECONDS);
        assertEquals(cursor.getMarkDeletedPosition(), p.get(4));
        assertFalse(first.accepted.isDone() || second.accepted.isDone(), "no accepted-only state without writes");
        assertEquals(first.violations, List.of());
        assertEquals(second.violations, List.of());
    }
}
