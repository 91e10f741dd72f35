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
import static org.testng.Assert.assertNotEquals;
import static org.testng.Assert.assertTrue;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.bookkeeper.client.AddEntryGate;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.Position;
import org.testng.annotations.Test;

/**
 * A partial batch-index ack reported complete must be recovered on every path its record takes: a
 * cursor-ledger record, the metadata-store fallback after a failed write or with no cursor ledger, a
 * cursor-ledger switch, and a switch whose first record failed. Upstream recovers the batch indexes of a
 * metadata-store record (cursorsLedgerId -1) only from #26474 on (apache/pulsar #20585, #26475); our
 * patch "Recovery: a cleanly closed cursor keeps its batch indexes" is the same change on every line.
 */
public class CursorBatchIndexAckPathsBenchTest extends CursorBenchBase {
    // Index 2 of p6 stays unacknowledged; indexes 0 and 1 are acknowledged.
    private static final long[] UNACKED = {0b100};

    @Override
    protected ManagedLedgerConfig config() {
        // Two records per cursor ledger: the third write switches to a new one.
        ManagedLedgerConfig config = new ManagedLedgerConfig().setMetadataMaxEntriesPerLedger(2);
        config.setDeletionAtBatchIndexLevelEnabled(true);
        return config;
    }

    private static Position partial(Position p) {
        return AckSetStateUtil.createPositionWithAckSet(p.getLedgerId(), p.getEntryId(), UNACKED);
    }

    /** A partial ack alone is written to the cursor ledger; upstream completes it with no write. */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aPartialBatchAckInACursorLedgerRecordSurvivesACrash() throws Exception {
        Scenario s = new Scenario("batch-ack-ledger-record", false);
        s.cursor.asyncDelete(partial(s.p.get(6)), s.probe.delete(s.ack), null);
        await().atMost(WAIT).until(s.ack.future::isDone);
        assertTrue(s.ack.succeeded());

        ManagedCursorImpl recovered = s.crash();
        assertEquals(recovered.getDeletedBatchIndexesAsLongArray(s.p.get(6)), UNACKED,
                "a batch ack reported complete, lost in a crash");
        assertEquals(s.probe.violations, List.of());
    }

    /** The write fails at the bookies and falls back to the metadata store, batch indexes included. */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aPartialBatchAckWrittenToTheMetadataStoreAfterAFailedWriteSurvivesACrash() throws Exception {
        Scenario s = new Scenario("batch-ack-after-failed-write", false);
        CompletableFuture<Void> failedWrite = AddEntryGate.holdNextAdd(bkc);
        s.cursor.asyncDelete(List.of(partial(s.p.get(6)), s.p.get(8)), s.probe.delete(s.ack), null);
        failedWrite.completeExceptionally(BKException.create(BKException.Code.NotEnoughBookiesException));
        await().atMost(WAIT).until(s.ack.future::isDone);
        assertTrue(s.ack.succeeded(), "written to the metadata store");
        assertEquals(s.cursor.getState(), "NoLedger");

        assertRecovered(s);
    }

    /** No cursor ledger can be created: the record goes to the metadata store, batch indexes included. */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aPartialBatchAckOfACursorWithoutCursorLedgerIsKeptInTheMetadataStore() throws Exception {
        Scenario s = new Scenario("batch-ack-no-cursor-ledger", true);
        bkc.failNow(BKException.Code.NotEnoughBookiesException);
        s.cursor.asyncDelete(List.of(partial(s.p.get(6)), s.p.get(8)), s.probe.delete(s.ack), null);
        await().atMost(WAIT).until(s.ack.future::isDone);
        assertTrue(s.ack.succeeded(), "written to the metadata store");
        assertEquals(s.cursor.getState(), "NoLedger");

        assertRecovered(s);
    }

    /** The cursor ledger is full: the new one's first record holds the batch indexes. */
    @Test(timeOut = 60_000)
    public void aPartialBatchAckSurvivesACursorLedgerSwitch() throws Exception {
        Scenario s = new Scenario("batch-ack-ledger-switch", false);
        long before = s.cursor.getCursorLedger();
        s.cursor.asyncDelete(List.of(partial(s.p.get(6)), s.p.get(8)), s.probe.delete(s.ack), null);
        await().atMost(WAIT).until(() -> s.ack.future.isDone() && s.cursor.getCursorLedger() != before
                && "Open".equals(s.cursor.getState()) && writesInFlight(s.cursor) == 0 && queued(s.cursor) == 0);
        assertTrue(s.ack.succeeded());
        assertNotEquals(s.cursor.getCursorLedger(), before, "switched");

        assertRecovered(s);
    }

    /**
     * After a fallback to the metadata store, the next write creates a cursor ledger whose first record fails:
     * the batch indexes made durable by the fallback must survive (upstream names the empty ledger and drops
     * them either way).
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aPartialBatchAckSurvivesASwitchWhoseFirstRecordFailed() throws Exception {
        Scenario s = new Scenario("batch-ack-failed-first-record", false);
        CompletableFuture<Void> failedWrite = AddEntryGate.holdNextAdd(bkc);
        s.cursor.asyncDelete(List.of(partial(s.p.get(6)), s.p.get(8)), s.probe.delete(s.ack), null);
        failedWrite.completeExceptionally(BKException.create(BKException.Code.NotEnoughBookiesException));
        await().atMost(WAIT).until(s.ack.future::isDone);
        assertTrue(s.ack.succeeded(), "written to the metadata store");

        CompletableFuture<Void> firstRecord = AddEntryGate.holdNextAdd(bkc);
        CompletableFuture<Void> nextWrite = AddEntryGate.holdAdd(bkc, 1);
        CallbackProbe.Outcome later = s.probe.newOutcome("delete(p9)");
        s.cursor.asyncDelete(s.p.get(9), s.probe.delete(later), null);
        firstRecord.completeExceptionally(BKException.create(BKException.Code.NotEnoughBookiesException));
        await().atMost(WAIT).until(() -> later.future.isDone() || nextWrite.isDone()
                || writesInFlight(s.cursor) == 1);
        if (later.future.isDone()) {
            nextWrite.complete(null);
        }

        assertRecovered(s);
        nextWrite.complete(null);
        await().atMost(WAIT).until(later.future::isDone);
        assertTrue(later.succeeded(), "delete(p9), once the bookies take its write");
    }

    private void assertRecovered(Scenario s) throws Exception {
        ManagedCursorImpl recovered = s.crash();
        assertEquals(recovered.getDeletedBatchIndexesAsLongArray(s.p.get(6)), UNACKED,
                "a batch ack reported complete, lost in a crash");
        assertTrue(recovered.isMessageDeleted(s.p.get(8)), "delete(p8) reported complete, lost in a crash");
        assertEquals(s.probe.violations, List.of());
    }
}
