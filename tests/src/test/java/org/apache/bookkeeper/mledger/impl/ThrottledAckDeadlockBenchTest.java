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
import com.google.common.util.concurrent.GatedRateLimiter;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.Position;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.Test;

/**
 * A throttled ack and a cursor-ledger write in progress must not deadlock (a review finding on the
 * throttled-ack fix). In a class of its own: a deadlock leaves the ledger's threads blocked for the rest of the JVM.
 */
public class ThrottledAckDeadlockBenchTest extends CursorBenchBase {
    private final ExecutorService ackers = Executors.newCachedThreadPool();

    @AfterMethod(alwaysRun = true)
    public void stopAckers() {
        ackers.shutdownNow();
    }

    /**
     * A throttled ack stops at the limiter's decision while a flush's write, holding the queue monitor,
     * waits for the cursor lock to serialize. Nothing the ack does next may need the monitor while it holds
     * the cursor lock: both must finish. Upstream does not deadlock here, and fails the test for #26484: its
     * flush is throttled too, and reports the mark-delete complete with nothing written.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aThrottledAckAndAWriteInProgressDoNotDeadlock() throws Exception {
        ManagedLedger ledger = factory.open("throttled-ack-and-flush",
                new ManagedLedgerConfig().setThrottleMarkDelete(0.001));
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = openWithEntries(ledger, cursor, 10);
        markDeleteTakingThePermit(cursor, p.get(1), Map.of());
        CallbackProbe probe = new CallbackProbe(cursor);
        cursor.asyncDelete(p.get(3), probe.delete(probe.newOutcome("delete(p3)")), null);
        GatedRateLimiter gate = installGatedLimiter(cursor, 0.001);
        CallbackProbe.Outcome md = probe.newOutcome("markDelete(p6)");
        ackers.execute(() -> cursor.asyncMarkDelete(p.get(6), probe.markDelete(md), null));
        gate.entered.get(10, TimeUnit.SECONDS);
        CompletableFuture<Void> flushed = CompletableFuture.runAsync(cursor::flush, ackers);
        ReentrantReadWriteLock lock = cursorLock(cursor);
        await().atMost(WAIT).until(() -> flushed.isDone() || lock.hasQueuedThreads());
        gate.release.complete(null);

        await().atMost(WAIT).until(() -> flushed.isDone() && (md.accepted.isDone() || md.future.isDone()));
        cursor.flush();
        await().atMost(WAIT).until(md.future::isDone);
        assertTrue(md.succeeded());
        assertEquals(crashAndRecover("throttled-ack-and-flush", "c1").getMarkDeletedPosition(), p.get(6));
        assertEquals(probe.violations, List.of());
    }
}
