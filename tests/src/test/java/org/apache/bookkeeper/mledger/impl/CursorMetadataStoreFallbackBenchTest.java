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
import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.pulsarfork.bench.BenchGroups.UPSTREAM_BUG;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import io.netty.buffer.ByteBuf;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.mledger.AsyncCallbacks;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.Position;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/**
 * A cursor whose cursor ledger cannot be created (bookies down or read-only) persists its acks in the
 * metadata store (apache/pulsar #20935). Upstream does so only for a cursor with nothing after its
 * position (#26485): a backlogged cursor's acks fail, and everything since its last record is delivered
 * again once the bookies are back. The mock bookie refuses exactly one operation per {@code failNow}: the
 * creation of the cursor ledger that the recovered cursor (which has none) needs for its next write.
 */
public class CursorMetadataStoreFallbackBenchTest extends CursorBenchBase {
    // ZooKeeper's default jute.maxbuffer: a larger znode write drops the client's session.
    private static final int ZOOKEEPER_DEFAULT_MAX_BUFFER = 0xfffff;
    // 5.0 names the metric attributes of a truncated record after the topic: ledgers are named as topics.
    private static final String TOPIC = "public/default/persistent/";

    private int rangesInMetadataStore;

    @BeforeMethod(alwaysRun = true)
    public void defaultBound() {
        rangesInMetadataStore = new ManagedLedgerConfig().getMaxUnackedRangesToPersistInMetadataStore();
    }

    @Override
    protected ManagedLedgerConfig config() {
        ManagedLedgerConfig config = new ManagedLedgerConfig();
        config.setMaxUnackedRangesToPersistInMetadataStore(rangesInMetadataStore);
        return config;
    }

    /** A backlogged cursor's mark-delete and individual delete are durable, in the metadata store. */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aBackloggedCursorPersistsItsAcksInTheMetadataStore() throws Exception {
        Scenario s = new Scenario(TOPIC + "fallback-backlogged", true);
        CallbackProbe.Outcome markDelete = s.probe.newOutcome("markDelete(p6)");
        CallbackProbe.Outcome delete = s.probe.newOutcome("delete(p8)");

        refuseNextCursorLedger();
        s.cursor.asyncMarkDelete(s.p.get(6), s.probe.markDelete(markDelete), null);
        await().atMost(WAIT).until(() -> markDelete.future.isDone());
        refuseNextCursorLedger();
        s.cursor.asyncDelete(s.p.get(8), s.probe.delete(delete), null);
        await().atMost(WAIT).until(() -> delete.future.isDone());

        assertTrue(markDelete.succeeded(), "markDelete(p6) with p7..p9 after it, no cursor ledger");
        assertTrue(delete.succeeded(), "delete(p8) with p9 after it, no cursor ledger");
        assertEquals(s.cursor.getState(), "NoLedger");
        ManagedCursorImpl recovered = s.crash();
        assertEquals(recovered.getMarkDeletedPosition(), s.p.get(6));
        assertTrue(recovered.isMessageDeleted(s.p.get(8)), "delete(p8) reported durable, lost in a crash");
        assertFalse(recovered.isMessageDeleted(s.p.get(7)));
        assertEquals(s.probe.violations, List.of());
    }

    /**
     * A backlogged cursor falls back only while its state fits a metadata-store record (at most
     * maxUnackedRangesToPersistInMetadataStore ranges, here one): past that its ack fails as upstream's did,
     * applied in memory and not lost from the record written before.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aBackloggedCursorFallsBackOnlyWithARecordThatFitsTheMetadataStore() throws Exception {
        rangesInMetadataStore = 1;
        Scenario s = new Scenario(TOPIC + "fallback-bound", true);
        CallbackProbe.Outcome first = s.probe.newOutcome("delete(p6)");
        CallbackProbe.Outcome second = s.probe.newOutcome("delete(p8)");
        refuseNextCursorLedger();
        s.cursor.asyncDelete(s.p.get(6), s.probe.delete(first), null);
        await().atMost(WAIT).until(first.future::isDone);
        assertTrue(first.succeeded(), "one range fits the metadata store");
        refuseNextCursorLedger();
        s.cursor.asyncDelete(s.p.get(8), s.probe.delete(second), null);
        await().atMost(WAIT).until(second.future::isDone);
        assertFalse(second.succeeded(), "two ranges do not");
        assertTrue(s.cursor.isMessageDeleted(s.p.get(8)), "applied in memory");

        ManagedCursorImpl recovered = s.crash();
        assertTrue(recovered.isMessageDeleted(s.p.get(6)), "delete(p6) reported durable, lost in a crash");
        assertEquals(s.probe.violations, List.of());
    }

    /**
     * The largest record a backlogged cursor writes to the metadata store, at the default bound of 1,000
     * ranges, must fit a znode. Its size is printed for the docs.
     */
    @Test(groups = FORK_ONLY, timeOut = 120_000)
    public void aFallbackRecordAtTheDefaultRangeCapFitsAZnode() throws Exception {
        int holes = new ManagedLedgerConfig().getMaxUnackedRangesToPersistInMetadataStore();
        Scenario s = new Scenario(TOPIC + "fallback-znode-size", true);
        List<Position> acked = everyOtherOfNewEntries(s, 2 * holes);
        CallbackProbe.Outcome delete = s.probe.newOutcome(holes + " holes");
        refuseNextCursorLedger();
        s.cursor.asyncDelete(acked, s.probe.delete(delete), null);
        await().atMost(WAIT).until(() -> delete.future.isDone());
        assertTrue(delete.succeeded(), "the deletes, in a metadata-store record");

        String path = "/managed-ledgers/" + TOPIC + "fallback-znode-size/c1";
        byte[] znode = metadataStore.get(path).get().orElseThrow().getValue();
        assertEquals(s.cursor.getState(), "NoLedger");
        ManagedCursorImpl recovered = s.crash();
        int ranges = recovered.getTotalNonContiguousDeletedMessagesRange();
        assertEquals(ranges, holes, "ranges recovered from the znode");
        printAndCheckTheRecordSize(znode.length, ranges);
        assertEquals(s.probe.violations, List.of());
    }

    /** Adds {@code count} entries to the scenario's ledger; returns the odd ones, so that acking them leaves holes. */
    private static List<Position> everyOtherOfNewEntries(Scenario s, int count) throws Exception {
        List<CompletableFuture<Position>> added = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            CompletableFuture<Position> f = new CompletableFuture<>();
            s.ledger.asyncAddEntry(new byte[] {1}, new AsyncCallbacks.AddEntryCallback() {
                @Override
                public void addComplete(Position position, ByteBuf entryData, Object ctx) {
                    f.complete(position);
                }

                @Override
                public void addFailed(ManagedLedgerException e, Object ctx) {
                    f.completeExceptionally(e);
                }
            }, null);
            added.add(f);
        }
        List<Position> acked = new ArrayList<>();
        for (int i = 1; i < added.size(); i += 2) {
            acked.add(added.get(i).get());
        }
        return acked;
    }

    private static void printAndCheckTheRecordSize(int znodeBytes, int ranges) {
        // Real ledger ids take up to 4 more bytes per endpoint than this test's small ones.
        long withRealLedgerIds = znodeBytes + 8L * ranges;
        System.out.printf("fallback record: %d ranges in %d bytes, about %d with real ledger ids%n",
                ranges, znodeBytes, withRealLedgerIds);
        assertTrue(withRealLedgerIds < ZOOKEEPER_DEFAULT_MAX_BUFFER, withRealLedgerIds + " bytes");
    }

    // The next bookie operation fails: here, the creation of the cursor ledger the next write needs.
    private void refuseNextCursorLedger() {
        bkc.failNow(BKException.Code.NotEnoughBookiesException);
    }
}
