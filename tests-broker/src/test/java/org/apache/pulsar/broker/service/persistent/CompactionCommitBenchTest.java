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
package org.apache.pulsar.broker.service.persistent;

import static org.pulsarfork.bench.BenchGroups.UPSTREAM_BUG;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.client.AddEntryGate;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.mledger.AsyncCallbacks.ResetCursorCallback;
import org.apache.bookkeeper.mledger.ManagedCursor;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.Position;
import org.apache.pulsar.compaction.Compactor;
import org.testng.annotations.Test;

/**
 * #26486: when the compaction cursor fails to record a new compacted ledger, the broker must serve the view its
 * durable state names, and neither a crash, a graceful close nor the next compaction's seek may move it.
 */
public class CompactionCommitBenchTest extends CompactionCommitBenchBase {

    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aCompactedLedgerTheCursorFailedToRecordIsNotServedAndACrashRecoversTheServedView() throws Exception {
        long first = secondCommitFailsAtTheBookies();
        assertDurable(recoverCompactionCursor(), p.get(3), first, "a crash");
    }

    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aCompactedLedgerTheCursorFailedToRecordIsNotServedNorWrittenByTheClose() throws Exception {
        long first = secondCommitFailsAtTheBookies();
        ledger.close();
        assertDurable(recoverCompactionCursor(), p.get(3), first,
                "a graceful reload (the close writes the cursor's latest state)");
    }

    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void theNextCompactionsSeekAfterAFailedCommitRecordsTheServedView() throws Exception {
        long first = secondCommitFailsAtTheBookies();
        // The next compaction starts with a seek, which keeps the compaction cursor's mark-delete position.
        compactionCursor.resetCursor(p.get(0));
        assertServed(p.get(3), first, "after the next compaction's seek");
        // 4.0.8's seek moves the compaction cursor back to the reset position (#25118, fixed by #25119 on the later
        // lines): what matters here is that the seek does not record the failed commit's position.
        ManagedCursor recovered = recoverCompactionCursor();
        assertTrue(recovered.getMarkDeletedPosition().compareTo(p.get(3)) <= 0, "after the next compaction's seek"
                + " and a crash, the compaction cursor's mark-delete " + recovered.getMarkDeletedPosition()
                + " is past the compacted view the broker serves (up to " + p.get(3) + ")");
        assertEquals(recovered.getProperties().get(Compactor.COMPACTED_TOPIC_LEDGER_PROPERTY), Long.valueOf(first),
                "after the next compaction's seek and a crash, the compacted ledger the compaction cursor names");
    }

    /**
     * The next compaction starts while the previous commit's write is in flight (on 4.x the compactor does not wait
     * for its ack): its seek keeps the compaction cursor's state, which holds that commit, and queues behind the
     * write. The write fails: the seek must not record the failed commit.
     */
    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void theNextCompactionsSeekQueuedBehindACommitThatFailsDoesNotRecordIt() throws Exception {
        long[] ledgers = firstCommitRecorded();
        long first = ledgers[0];
        long second = ledgers[1];

        CompletableFuture<Void> commitWrite = AddEntryGate.holdNextAdd(bookKeeper);
        metadataStoreRefusesTheCompactionCursor();
        commit(p.get(6), second);
        // The subscription issues the mark-delete once the new compacted ledger is open: its add, held, comes first.
        awaitIssued(1);
        CompletableFuture<Position> seek = new CompletableFuture<>();
        compactionCursor.asyncResetCursor(p.get(0), false, new ResetCursorCallback() {
            @Override
            public void resetComplete(Object ctx) {
                seek.complete((Position) ctx);
            }

            @Override
            public void resetFailed(ManagedLedgerException exception, Object ctx) {
                seek.completeExceptionally(exception);
            }
        });
        commitWrite.completeExceptionally(new BKException.BKBookieHandleNotAvailableException());
        awaitOutcome(1);

        // Its outcome first (either), then what is served and durable, then how the seek ended.
        seek.handle((position, failure) -> null).get(10, TimeUnit.SECONDS);
        assertServed(p.get(3), first, "after the commit failed with the next compaction's seek queued behind it");
        assertDurable(recoverCompactionCursor(), p.get(3), first,
                "a crash, after the next compaction's seek queued behind the failed commit");
        // Refused for the failed commit, not failed otherwise (its own write at the bookies, a reset in progress).
        ExecutionException refused = expectThrows(ExecutionException.class, seek::get);
        Throwable why = refused.getCause().getCause();
        assertTrue(why != null && String.valueOf(why.getMessage()).contains("a commit it was taken from failed"),
                "the seek failed with " + refused.getCause() + ", caused by " + why);
    }
}
