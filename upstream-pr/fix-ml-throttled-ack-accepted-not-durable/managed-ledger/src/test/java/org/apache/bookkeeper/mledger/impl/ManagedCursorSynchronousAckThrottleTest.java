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
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.mledger.ManagedCursor;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.Position;
import org.testng.annotations.Test;

/**
 * The synchronous markDelete, delete and skipEntries wait for the durable write. The mark-delete rate limiter
 * must not defer that write by a limiter period: the broker calls them on shared threads (the backlog-quota trim
 * calls skipEntries and markDelete in a loop on the quota checker's thread), and past the operation timeout (30 s)
 * the caller gets an exception for an ack that was applied.
 */
public class ManagedCursorSynchronousAckThrottleTest extends ManagedCursorAckPathTestBase {
    // One permit, granted to the first mark-delete; the next one is 1,000 s away.
    private static final double NO_PERMIT_RATE = 0.001;
    // Far below one limiter period and the 30 s operation timeout; far above a write to the mock bookie.
    private static final long RETURNS_WITHIN_SECONDS = 5;

    @Test(timeOut = 60_000)
    public void testSynchronousAcksAreWrittenAtOnceUnderTheLimiter() throws Exception {
        ManagedLedgerConfig config = new ManagedLedgerConfig().setThrottleMarkDelete(NO_PERMIT_RATE);
        ManagedLedger ledger = factory.open("sync-acks-throttled", config);
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = addEntries(ledger, cursor, 10);
        cursor.markDelete(p.get(1));

        returnsAtOnce("markDelete(p3)", () -> cursor.markDelete(p.get(3)));
        returnsAtOnce("delete(p6)", () -> cursor.delete(p.get(6)));
        returnsAtOnce("skipEntries(1)", () -> cursor.skipEntries(1, ManagedCursor.IndividualDeletedEntries.Include));

        ManagedCursorImpl recovered = crashAndRecover("sync-acks-throttled", "c1", config);
        assertEquals(recovered.getMarkDeletedPosition(), p.get(4));
        assertTrue(recovered.isMessageDeleted(p.get(6)));
    }

    private interface Ack {
        void run() throws Exception;
    }

    private static void returnsAtOnce(String what, Ack ack) throws Exception {
        CompletableFuture<Void> returned = new CompletableFuture<>();
        Thread caller = new Thread(() -> {
            try {
                ack.run();
                returned.complete(null);
            } catch (Throwable t) {
                returned.completeExceptionally(t);
            }
        }, "sync-ack");
        caller.setDaemon(true);
        caller.start();
        caller.join(TimeUnit.SECONDS.toMillis(RETURNS_WITHIN_SECONDS));
        assertTrue(returned.isDone(), what + " was still waiting for the limiter after " + RETURNS_WITHIN_SECONDS
                + " s");
        returned.join();
    }
}
