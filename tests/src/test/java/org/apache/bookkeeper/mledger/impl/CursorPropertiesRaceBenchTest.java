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

import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.withSettings;
import static org.pulsarfork.bench.BenchGroups.UPSTREAM_BUG;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import java.lang.reflect.Field;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.Position;
import org.pulsarfork.bench.FixedUpstreamIn;
import org.testng.annotations.Test;

/**
 * A cursor-property update writes a copy of the cursor's last metadata record, guarded by that record's
 * version. Read in the other order (record, then version), the two can come from different records: a
 * metadata write completing in between pairs the record before it with the version after it, and the
 * update replaces the newer record with the older one. Found by the schedule explorer (4.0.8, seed 247):
 * the older record names no cursor ledger, so a restart rolls every durable ack back.
 */
public class CursorPropertiesRaceBenchTest extends CursorBenchBase {

    /**
     * A fresh cursor has no cursor ledger. The property update stops while it copies the record; in
     * between, markDelete(p5) creates the cursor ledger and names it in the metadata store. The update
     * must not then replace that record with the one it copied.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    @FixedUpstreamIn("5.0.0-M1")
    public void aPropertyUpdateDoesNotWriteBackARecordOlderThanItsVersion() throws Exception {
        ManagedLedger ledger = factory.open("property-update-races-switch", config());
        ManagedCursorImpl cursor = (ManagedCursorImpl) ledger.openCursor("c1");
        List<Position> p = openWithEntries(ledger, cursor, 10);
        ExecutorService updater = Executors.newSingleThreadExecutor();
        try {
            Thread updaterThread = CompletableFuture.supplyAsync(Thread::currentThread, updater).get();
            CopyGate gate = CopyGate.install(cursor, updaterThread);
            CompletableFuture<CompletableFuture<Void>> update =
                    CompletableFuture.supplyAsync(() -> cursor.putCursorProperty("k", "v"), updater);
            gate.entered.get(10, TimeUnit.SECONDS);

            cursor.markDelete(p.get(5));
            assertEquals(cursor.getMarkDeletedPosition(), p.get(5));
            gate.release.complete(null);
            CompletableFuture<Void> updated = update.get(10, TimeUnit.SECONDS);
            boolean propertyStored = updated.handle((v, e) -> e == null).get(10, TimeUnit.SECONDS);

            ManagedCursorImpl recovered = crashAndRecover("property-update-races-switch", "c1");
            assertEquals(recovered.getMarkDeletedPosition(), p.get(5), "markDelete(p5) reported durable, lost in"
                    + " a crash (the property update wrote back the record from before the cursor ledger)");
            if (propertyStored) {
                assertEquals(recovered.getCursorProperties().get("k"), "v", "the update reported success");
            }
        } finally {
            updater.shutdownNow();
        }
    }

    /**
     * Replaces the cursor's last metadata record by a copy that, when one thread first reads it, stops that
     * thread until released: it marks the moment the update has read the record and not yet sent it.
     */
    private static final class CopyGate {
        final CompletableFuture<Void> entered = new CompletableFuture<>();
        final CompletableFuture<Void> release = new CompletableFuture<>();

        static CopyGate install(ManagedCursorImpl cursor, Thread reader) throws Exception {
            CopyGate gate = new CopyGate();
            Field f = ManagedCursorImpl.class.getDeclaredField("managedCursorInfo");
            f.setAccessible(true);
            Object record = f.get(cursor);
            assertTrue(record != null, "a fresh cursor has a metadata record");
            Object gated = mock(f.getType(), withSettings().spiedInstance(record).defaultAnswer(invocation -> {
                if (Thread.currentThread() == reader && !gate.entered.isDone()) {
                    gate.entered.complete(null);
                    gate.release.get(10, TimeUnit.SECONDS);
                }
                return invocation.callRealMethod();
            }));
            f.set(cursor, gated);
            return gate;
        }
    }
}
