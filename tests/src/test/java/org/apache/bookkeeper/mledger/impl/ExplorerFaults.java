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

import java.util.List;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.mledger.AsyncCallbacks;
import org.apache.bookkeeper.mledger.Entry;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.PositionFactory;

/**
 * The fault injectors: the environment's steps (a read held with a read issued under it, cursor-ledger adds
 * held, completed, failed while held or made to fail next, a metadata-store write failing once, the next
 * BookKeeper operation refused: a cursor-ledger creation when it comes before any other), what a crash
 * leaves held, and the release of every hold at the end of a schedule. The holds themselves are
 * {@link ExplorerHarness}'.
 */
final class ExplorerFaults {
    private final ExplorerRun run;
    private final ExplorerHarness h;

    ExplorerFaults(ExplorerRun run) {
        this.run = run;
        this.h = run.h;
    }

    /** Whether the step is the environment's (this class's) rather than an operation on the cursor. */
    static boolean isFault(ExplorerStep.Kind kind) {
        switch (kind) {
            case HOLD_READ:
            case RELEASE_READ:
            case HOLD_ADD:
            case COMPLETE_HELD_ADD:
            case FAIL_HELD_ADD:
            case FAIL_NEXT_ADD:
            case FAIL_METADATA:
            case FAIL_CREATE:
                return true;
            default:
                return false;
        }
    }

    /** Injects or releases the step's fault; returns the read it issues under a new hold, or null. */
    ExplorerRun.Op apply(int step, ExplorerStep s) {
        switch (s.kind) {
            case HOLD_READ:
                return holdRead(step, s);
            case RELEASE_READ:
                h.releaseReads();
                return null;
            case HOLD_ADD:
                h.holdAdd();
                return null;
            case COMPLETE_HELD_ADD:
            case FAIL_HELD_ADD: {
                String what = h.releaseFirstHold(s.kind == ExplorerStep.Kind.FAIL_HELD_ADD,
                        BKException.Code.NotEnoughBookiesException);
                if (what != null) {
                    run.count("heldAdd." + what);
                }
                return null;
            }
            case FAIL_NEXT_ADD:
                h.failAdd(BKException.Code.NotEnoughBookiesException);
                return null;
            case FAIL_METADATA:
                h.failNextCursorPut(run.name, ExplorerRun.CURSOR);
                return null;
            case FAIL_CREATE:
                h.failNextBookieOperation(BKException.Code.NotEnoughBookiesException);
                return null;
            default:
                throw new IllegalStateException(s.kind.name());
        }
    }

    private ExplorerRun.Op holdRead(int step, ExplorerStep s) {
        if (h.readsHeld()) {
            return null;
        }
        h.holdReads();
        ExplorerRun.Op op = run.issue(step, s, "asyncReadEntries(1) under held reads");
        op.issueTick = run.clock.incrementAndGet();
        run.cursor.asyncReadEntries(1, new AsyncCallbacks.ReadEntriesCallback() {
            @Override
            public void readEntriesComplete(List<Entry> entries, Object ctx) {
                entries.forEach(Entry::release);
                op.fire(null);
            }

            @Override
            public void readEntriesFailed(ManagedLedgerException exception, Object ctx) {
                op.fire(exception);
            }
        }, null, PositionFactory.LATEST);
        return op;
    }

    /**
     * At a crash: new reads are no longer held, faults not yet claimed (the second factory's ledger opens would
     * claim a refused operation) are dropped and adds not yet taken are
     * dropped; adds already held stay held while the second factory recovers.
     */
    void atCrash() {
        h.stopHoldingNewReads();
        h.dropMetadataFaults();
        h.dropBookieFaults();
        h.dropUntakenAdds();
    }

    /**
     * Every fault dropped and every held add released, without waiting for quiescence (which takes the queue
     * monitor): for a thread that waits, under that monitor, for a write the schedule holds.
     */
    void releaseHoldsWithoutSettling() {
        h.dropMetadataFaults();
        if (h.readsHeld()) {
            h.releaseReads();
        }
        h.releaseAllAdds();
    }

    // Unclaimed faults are dropped first, then the held read, then each held add in order, each followed by
    // quiescence: the end of a schedule is as deterministic as its steps.
    void releaseEverything() {
        h.dropMetadataFaults();
        h.dropUnclaimedAddFaults();
        h.settle(run::fingerprint);
        if (h.readsHeld()) {
            h.releaseReads();
            h.settle(run::fingerprint);
        }
        while (h.releaseFirstHold(false, 0) != null) {
            h.settle(run::fingerprint);
        }
        h.releaseAllAdds();
        h.settle(run::fingerprint);
    }
}
