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
import java.util.List;
import java.util.Map;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.Position;
import org.testng.annotations.Test;

/**
 * A mark-delete's properties when two threads ack one cursor: one applies {@code markDelete(p3, {k=3})} and has
 * not queued it yet ({@link MarkDeleteQueueStop}) when the other deletes p4, which moves the cursor to p4 and
 * writes a record there. That record must carry {k=3}, the properties of the newest mark-delete applied: the
 * mark-delete then completes with it (a record past its position), and a crash must recover {k=3}. Upstream, and
 * our jars before the properties were numbered at apply, wrote the older {k=1}.
 *
 * <p>And two mark-deletes at one position, applied in one order and queued in the other: the one applied first
 * reaches the queue after the other was written. Its record must not put its older properties back: upstream, and
 * our jars while properties were dated by the queued op, recovered them after both were reported durable.
 */
public class CursorPropertiesApplyOrderBenchTest extends CursorBenchBase {

    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aRecordWrittenBeforeAnAppliedMarkDeleteIsQueuedCarriesItsProperties() throws Exception {
        ParkedMarkDelete parked = parkMarkDeleteOfP3("properties-apply-order");
        assertEquals(parked.cursor.getMarkDeletedPosition(), parked.p.get(3), "markDelete(p3) applied");

        parked.cursor.delete(parked.p.get(4));
        parked.release();

        if (parked.md3.succeeded()) {
            assertEquals(crashAndRecover(parked.name, "c1").getProperties().get("k"), Long.valueOf(3L),
                    "markDelete(p3, {k=3}) reported durable, then the record at p4 was recovered");
        }
        assertTrue(parked.md3.succeeded(), "markDelete(p3, {k=3}): " + parked.md3.future);
        assertEquals(parked.probe.violations, List.of());
    }

    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aMarkDeleteQueuedAfterANewerOneAtItsPositionDoesNotWriteBackItsOlderProperties() throws Exception {
        ParkedMarkDelete parked = parkMarkDeleteOfP3("properties-queue-order");

        // Applied after {k=3}, written before it.
        parked.cursor.markDelete(parked.p.get(3), Map.of("k", 4L));
        parked.release();

        assertTrue(parked.md3.succeeded(), "markDelete(p3, {k=3}), superseded at its position: " + parked.md3.future);
        assertEquals(crashAndRecover(parked.name, "c1").getProperties().get("k"), Long.valueOf(4L),
                "markDelete(p3, {k=4}) applied last and reported durable, then {k=3} was written back");
        assertEquals(parked.probe.violations, List.of());
    }

    /**
     * A cursor at p1 with {k=1}, and {@code markDelete(p3, {k=3})} applied on a second thread that stopped before
     * the queue ({@link MarkDeleteQueueStop}).
     */
    private ParkedMarkDelete parkMarkDeleteOfP3(String name) throws Exception {
        ManagedLedger ledger = factory.open(name, new ManagedLedgerConfig());
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = openWithEntries(ledger, cursor, 10);
        cursor.markDelete(p.get(1), Map.of("k", 1L));
        CallbackProbe probe = new CallbackProbe(cursor);
        CallbackProbe.Outcome md3 = probe.newOutcome("markDelete(p3, {k=3})");
        MarkDeleteQueueStop stop = MarkDeleteQueueStop.install(cursor);
        Thread acking = new Thread(() -> {
            try {
                cursor.asyncMarkDelete(p.get(3), Map.of("k", 3L), probe.markDelete(md3), null);
            } finally {
                stop.done();
            }
        }, "acking-p3");
        stop.arm(acking);
        acking.start();
        assertTrue(stop.awaitStopped(acking, 10), "markDelete(p3, {k=3}) stopped between its apply and the queue");
        return new ParkedMarkDelete(name, cursor, p, probe, md3, stop, acking);
    }

    private static final class ParkedMarkDelete {
        final String name;
        final ManagedCursorImpl cursor;
        final List<Position> p;
        final CallbackProbe probe;
        final CallbackProbe.Outcome md3;
        private final MarkDeleteQueueStop stop;
        private final Thread acking;

        ParkedMarkDelete(String name, ManagedCursorImpl cursor, List<Position> p, CallbackProbe probe,
                         CallbackProbe.Outcome md3, MarkDeleteQueueStop stop, Thread acking) {
            this.name = name;
            this.cursor = cursor;
            this.p = p;
            this.probe = probe;
            this.md3 = md3;
            this.stop = stop;
            this.acking = acking;
        }

        /** Lets the mark-delete go on to the queue, and waits for its outcome. */
        void release() throws InterruptedException {
            stop.release();
            acking.join(10_000);
            await().atMost(WAIT).until(md3.future::isDone);
        }
    }
}
