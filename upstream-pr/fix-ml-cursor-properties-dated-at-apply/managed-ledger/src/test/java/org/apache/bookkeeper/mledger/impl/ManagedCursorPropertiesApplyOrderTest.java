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
import static org.testng.Assert.assertTrue;
import java.lang.reflect.Field;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.Position;
import org.testng.annotations.Test;

/**
 * A mark-delete's properties are dated when the mark-delete is applied, not when its operation reaches the
 * pending mark-delete queue. Two mark-deletes at one position, applied by two threads in one order, can reach the
 * queue in the other: the one applied first must not write its older properties back over the newer ones, both
 * having been reported complete.
 */
public class ManagedCursorPropertiesApplyOrderTest extends ManagedCursorAckPathTestBase {

    @Test(timeOut = 60_000)
    public void testMarkDeleteQueuedAfterANewerOneAtItsPositionDoesNotWriteBackItsProperties() throws Exception {
        ManagedLedgerConfig config = new ManagedLedgerConfig();
        ManagedLedgerImpl ledger = (ManagedLedgerImpl) factory.open("properties-apply-order", config);
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = addEntries(ledger, cursor, 10);
        cursor.markDelete(p.get(1), Map.of("k", 1L));

        // markDelete(p3, {k=3}) is applied, then its thread stops before the operation is queued.
        StopBeforeQueue stop = StopBeforeQueue.install(ledger);
        Recorded k3 = new Recorded(cursor);
        Thread acking = new Thread(() -> cursor.asyncMarkDelete(p.get(3), Map.of("k", 3L), k3, null), "acking-p3");
        stop.armed = acking;
        acking.start();
        assertTrue(stop.stopped.await(10, TimeUnit.SECONDS), "markDelete(p3, {k=3}) stopped before the queue");

        // Applied after {k=3}, queued and written before it.
        cursor.markDelete(p.get(3), Map.of("k", 4L));
        stop.release.countDown();
        k3.done.get(10, TimeUnit.SECONDS);

        assertEquals(crashAndRecover("properties-apply-order", "c1", config).getProperties().get("k"),
                Long.valueOf(4L), "markDelete(p3, {k=4}) was applied last and completed; {k=3} was written back");
        assertEquals(k3.violations, List.of());
    }

    /**
     * Stops one thread in {@code ManagedLedgerMBeanImpl#addMarkDeleteOp}, the first call of
     * {@code internalAsyncMarkDelete}: after the mark-delete was applied, before its operation is queued, off the
     * cursor's lock and the pendingMarkDeleteOps monitor.
     */
    private static final class StopBeforeQueue extends ManagedLedgerMBeanImpl {
        final CountDownLatch stopped = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        volatile Thread armed;

        private StopBeforeQueue(ManagedLedgerImpl ledger) {
            super(ledger);
        }

        static StopBeforeQueue install(ManagedLedgerImpl ledger) throws Exception {
            StopBeforeQueue stop = new StopBeforeQueue(ledger);
            Field mbean = ManagedLedgerImpl.class.getDeclaredField("mbean");
            mbean.setAccessible(true);
            mbean.set(ledger, stop);
            return stop;
        }

        @Override
        public void addMarkDeleteOp() {
            if (Thread.currentThread() == armed) {
                armed = null;
                stopped.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            super.addMarkDeleteOp();
        }
    }
}
