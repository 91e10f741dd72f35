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
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.mledger.AsyncCallbacks;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.pulsar.metadata.api.Stat;
import org.awaitility.core.ConditionTimeoutException;

/**
 * The recovery and the contract check: what recovery starts from, the cursor recovered on the second factory
 * (or the live non-durable one), and the invariants over the operations and what they reported.
 *
 * <p>The oracle is conservative. An ack is "complete" only when its callback reported success (not merely
 * accepted). It is exempt from the durability check when a reset that did not report failure completed after
 * the ack was issued (or never completed): that reset may legitimately supersede it. Acks that changed nothing
 * in memory when issued (already covered) are not checked.
 */
final class ExplorerOracle {
    private final ExplorerRun run;

    ExplorerOracle(ExplorerRun run) {
        this.run = run;
    }

    // ---- callbacks ----

    // Everything is released and quiescent: what has not fired by now waits for nothing but a timer (the
    // limiter's scheduled write, 1000 s away at 0.001/s). The grace period bounds the wait.
    void awaitOutcomes() {
        awaitAllFired();
        // Our limiter may still hold acks (an ack the limiter holds waits for a write that holds it, at worst the
        // scheduled one 1000 s away): those are reported by the held-ack check, not here. Skips and clear-backlog
        // hear no "accepted" (their internal callback does not pass it on), so they count as possibly held too.
        int held = run.plan.durable ? ExplorerHarness.acceptedNotDurable(run.cursor) : -1;
        for (int k = 0; k < run.ops.size(); k++) {
            ExplorerRun.Op op = run.ops.get(k);
            if (!op.thrown && op.fireTick == 0 && held > 0 && isAck(op)) {
                run.count("check.pendingAckPossiblyHeld");
                continue;
            }
            if (!op.thrown && op.fireTick == 0) {
                run.violations.add(new ExplorerRun.Violation("callback-never-fired:" + op.s.kind,
                        "#" + k + " step " + op.step + " " + op.label + " was never called back (" + op.status().trim()
                                + ") although every hold was released " + run.hangMillis + " ms ago; cursor state="
                                + run.cursor.getState() + ", queued=" + ExplorerHarness.queued(run.cursor)
                                + ", writesInFlight=" + ExplorerHarness.writesInFlight(run.cursor)));
            }
        }
    }

    private void awaitAllFired() {
        run.h.settle(run::fingerprint);
        if (!allFired()) {
            try {
                await().atMost(Duration.ofMillis(run.hangMillis)).pollInterval(Duration.ofMillis(5))
                        .until(this::allFired);
            } catch (ConditionTimeoutException e) {
                // reported by the caller
            }
        }
    }

    /**
     * A drain (every hold released, then a flush): every callback has fired but those of acks our cursor holds
     * past the record's caps, and our cursor holds no other ack. Unlike the end of a schedule, the limiter's
     * scheduled write excuses nothing here: the flush wrote the latest state, and an ack that record does not
     * complete waits for a write no step will cause.
     */
    void checkDrained(int step) {
        awaitAllFired();
        int pastCap = run.ours && run.plan.durable ? Math.max(0, ExplorerHarness.pastRecordCap(run.cursor)) : 0;
        List<Integer> pendingAcks = new ArrayList<>();
        for (int k = 0; k < run.ops.size(); k++) {
            ExplorerRun.Op op = run.ops.get(k);
            if (op.thrown || op.fireTick != 0) {
                continue;
            }
            if (isAck(op)) {
                pendingAcks.add(k);
            } else {
                run.violations.add(pendingAfterDrain(k, op, step, pastCap));
            }
        }
        if (pendingAcks.size() > pastCap) {
            for (int k : pendingAcks) {
                run.violations.add(pendingAfterDrain(k, run.ops.get(k), step, pastCap));
            }
        }
        int held = run.ours && run.plan.durable ? ExplorerHarness.acceptedNotDurable(run.cursor) : 0;
        if (held > pastCap) {
            run.violations.add(new ExplorerRun.Violation("held-after-drain",
                    "getAcceptedNotDurableCount() = " + held + " with " + pastCap + " past the record caps, after"
                            + " every hold was released and a flush ran at step " + step + " (dirty="
                            + ExplorerHarness.dirty(run.cursor) + ", state=" + run.cursor.getState() + ")"));
        }
    }

    /**
     * After each step: a reset's record is written alone (MarkDeleteQueue#next). Behind an ack write still in
     * flight it would share that write's fate: failed with it, both fall back to the metadata store with one version,
     * and the reset fails where it should have been written to a new cursor ledger, an outcome the end-state checks
     * accept as any failed reset.
     */
    void checkBarrierWrittenAlone(int step) {
        boolean barrier;
        int inFlight;
        synchronized (run.cursor.pendingMarkDeleteOps) {
            barrier = ExplorerHarness.barrierInFlight(run.cursor);
            inFlight = ExplorerHarness.writesInFlight(run.cursor);
        }
        if (barrier && inFlight > 1) {
            run.violations.add(new ExplorerRun.Violation("barrier-not-alone",
                    "after step " + step + " a reset's record is in flight with " + (inFlight - 1)
                            + " other write(s)"));
        }
    }

    private ExplorerRun.Violation pendingAfterDrain(int k, ExplorerRun.Op op, int step, int pastCap) {
        return new ExplorerRun.Violation("pending-after-drain:" + op.s.kind,
                "#" + k + " step " + op.step + " " + op.label + " was not called back (" + op.status().trim()
                        + ") after every hold was released and a flush ran at step " + step + "; acks held past"
                        + " the record caps: " + pastCap + ", state=" + run.cursor.getState() + ", queued="
                        + ExplorerHarness.queued(run.cursor) + ", writesInFlight="
                        + ExplorerHarness.writesInFlight(run.cursor));
    }

    // Acks a record's caps left out wait for acks below them, which no step sends once the schedule is over: as
    // many unfired acks as our cursor holds past the caps are settled too, without waiting out the grace period.
    private boolean allFired() {
        int unfired = 0;
        for (ExplorerRun.Op op : run.ops) {
            if (!op.thrown && op.fireTick == 0) {
                if (run.plan.cap == null || !isAck(op)) {
                    return false;
                }
                unfired++;
            }
        }
        return unfired == 0 || unfired <= ExplorerHarness.pastRecordCap(run.cursor);
    }

    /** Our jar: once every hold is released and a flush ran, no ack is still held for a durable write. */
    void checkHeldAcksDrained() {
        if (!run.plan.durable || !run.ours) {
            return;
        }
        int held = ExplorerHarness.acceptedNotDurable(run.cursor);
        if (held > 0) {
            run.violations.add(new ExplorerRun.Violation("held-acks-not-drained",
                    "getAcceptedNotDurableCount() = " + held + " after every hold was released and a flush"
                            + " ran (dirty=" + ExplorerHarness.dirty(run.cursor) + ", state=" + run.cursor.getState()
                            + ")"));
        }
    }

    // ---- recovery ----

    // What recovery starts from: the cursor's metadata-store record and whether the cursor ledger it names exists.
    // The record's class differs between lines (protobuf on 4.0, LightProto from 4.1): read through its getters.
    @SuppressWarnings({"rawtypes", "unchecked"})
    String storedRecord() {
        CompletableFuture<String> info = new CompletableFuture<>();
        ((ManagedLedgerImpl) run.ledger).getStore().asyncGetCursorInfo(run.name, ExplorerRun.CURSOR,
                new MetaStore.MetaStoreCallback() {
                    @Override
                    public void operationComplete(Object i, Stat stat) {
                        info.complete(describeRecord(i, stat));
                    }

                    @Override
                    public void operationFailed(ManagedLedgerException.MetaStoreException e) {
                        info.complete("unreadable: " + e);
                    }
                });
        try {
            return info.get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            return "unreadable: " + e;
        }
    }

    private String describeRecord(Object i, Stat stat) {
        try {
            long cursorLedger = (long) getter(i, "getCursorsLedgerId");
            return "cursorLedger=" + cursorLedger + (cursorLedger < 0 ? ""
                    : run.h.ledgerExists(cursorLedger) ? " (" + run.h.ledgerEntries(cursorLedger) + " entries)"
                    : " (deleted)") + " markDelete=" + getter(i, "getMarkDeleteLedgerId") + ":"
                    + getter(i, "getMarkDeleteEntryId") + " ranges="
                    + getter(i, "getIndividualDeletedMessagesCount") + " version=" + stat.getVersion();
        } catch (ReflectiveOperationException e) {
            return "unreadable: " + e;
        }
    }

    private static Object getter(Object target, String method) throws ReflectiveOperationException {
        return target.getClass().getMethod(method).invoke(target);
    }

    // Opens the ledger on the second factory (left open in run.recoveredLedger: its close writes, and must wait
    // until the holds are released).
    ExplorerRun.Snapshot recover(String source) {
        try {
            CompletableFuture<ManagedLedger> opened = new CompletableFuture<>();
            run.recovery.asyncOpen(run.name, new AsyncCallbacks.OpenLedgerCallback() {
                @Override
                public void openLedgerComplete(ManagedLedger l, Object ctx) {
                    opened.complete(l);
                }

                @Override
                public void openLedgerFailed(ManagedLedgerException exception, Object ctx) {
                    opened.completeExceptionally(exception);
                }
            }, null);
            run.recoveredLedger = opened.get(10, TimeUnit.SECONDS);
            ManagedCursorImpl recovered = (ManagedCursorImpl) run.recoveredLedger.openCursor(ExplorerRun.CURSOR);
            ExplorerRun.Snapshot s = snapshotOf(recovered, source);
            s.properties = new HashMap<>(recovered.getCursorProperties());
            s.markDeleteProperties = new HashMap<>(recovered.getProperties());
            return s;
        } catch (Exception e) {
            run.violations.add(new ExplorerRun.Violation("recovery-failed", source + ": " + e));
            return null;
        }
    }

    ExplorerRun.Snapshot liveSnapshot() {
        return snapshotOf(run.cursor, "live non-durable cursor after the schedule");
    }

    private ExplorerRun.Snapshot snapshotOf(ManagedCursorImpl c, String source) {
        int entries = run.plan.entries;
        ExplorerRun.Snapshot s = new ExplorerRun.Snapshot();
        s.source = source;
        s.markDelete = run.index(c.getMarkDeletedPosition());
        s.deleted = new boolean[entries];
        s.batch = new long[entries][];
        for (int k = 0; k < entries; k++) {
            s.deleted[k] = c.isMessageDeleted(run.p.get(k));
            s.batch[k] = c.getDeletedBatchIndexesAsLongArray(run.p.get(k));
        }
        // Entries deleted right after the mark-delete position count as mark-deleted: a record written at an
        // older position holds the acks absorbed past it as the range (written, mark-delete].
        while (s.markDelete + 1 < entries && s.deleted[s.markDelete + 1]) {
            s.markDelete++;
        }
        return s;
    }

    static void closeQuietly(ManagedLedger l) {
        if (l == null) {
            return;
        }
        CompletableFuture<Void> closed = new CompletableFuture<>();
        try {
            l.asyncClose(new AsyncCallbacks.CloseCallback() {
                @Override
                public void closeComplete(Object ctx) {
                    closed.complete(null);
                }

                @Override
                public void closeFailed(ManagedLedgerException exception, Object ctx) {
                    closed.complete(null);
                }
            }, null);
            closed.get(5, TimeUnit.SECONDS);
        } catch (Exception e) {
            // the next schedule uses another ledger; a close that fails or hangs changes nothing it checks
        }
    }

    // ---- the contract ----

    void check(ExplorerRun.Snapshot s) {
        List<ExplorerRun.Op> resets = new ArrayList<>();
        for (ExplorerRun.Op op : run.ops) {
            if (op.s.kind == ExplorerStep.Kind.RESET && !op.thrown) {
                resets.add(op);
            }
        }
        checkCompleteAcks(s, resets);
        checkCompleteProperties(s);
        checkMarkDeleteProperties(s);
        ExplorerRun.Op last = winningReset(resets);
        if (last != null) {
            checkResetRecovered(s, last);
        }
        checkDeletedAllowed(s, resets, last);
    }

    // (b) every complete ack is in the state, unless a reset that may have succeeded completed after it was
    // issued (or never completed).
    private void checkCompleteAcks(ExplorerRun.Snapshot s, List<ExplorerRun.Op> resets) {
        for (int k = 0; k < run.ops.size(); k++) {
            ExplorerRun.Op a = run.ops.get(k);
            if (!isAck(a) || a.redundant || !a.succeededBy(run.crashTick)) {
                continue;
            }
            if (supersedingReset(a, resets) != null) {
                run.count("check.ackExemptByReset");
                continue;
            }
            run.count("check.completeAckVerified");
            String missing = missing(a, s);
            if (missing != null) {
                run.violations.add(new ExplorerRun.Violation("complete-ack-lost:" + a.s.kind
                        + (a.outcome.accepted.isDone() ? "(accepted first)" : ""), "#" + k + " step " + a.step + " "
                        + a.label + " reported complete@" + a.fireTick + " but " + s.source + " " + missing));
            }
        }
    }

    private static ExplorerRun.Op supersedingReset(ExplorerRun.Op a, List<ExplorerRun.Op> resets) {
        for (ExplorerRun.Op r : resets) {
            boolean mayHaveLanded = !(r.fireTick != 0 && r.failed);
            if (mayHaveLanded && (r.fireTick == 0 || r.fireTick > a.issueTick)) {
                return r;
            }
        }
        return null;
    }

    private void checkCompleteProperties(ExplorerRun.Snapshot s) {
        for (int k = 0; k < run.ops.size(); k++) {
            ExplorerRun.Op a = run.ops.get(k);
            if (a.s.kind == ExplorerStep.Kind.PUT_PROPERTY && a.succeededBy(run.crashTick)) {
                String value = s.properties.get(a.key);
                if (!("v" + a.step).equals(value)) {
                    run.violations.add(new ExplorerRun.Violation("complete-cursor-property-lost", "#" + k + " step "
                            + a.step + " " + a.label + " reported complete@" + a.fireTick + " but " + s.source
                            + " has " + a.key + "=" + value));
                }
            }
        }
    }

    // The recovered mark-delete properties are those of the newest complete mark-delete with properties, or those
    // of a record written after it: another mark-delete's, or none (an ack that moves the mark-delete position
    // writes no properties). Checked without resets (a reset's record has none). A mark-delete at the mark-delete
    // position counts: it writes its properties (each step's are its own).
    private void checkMarkDeleteProperties(ExplorerRun.Snapshot s) {
        int newest = -1;
        for (int k = 0; k < run.ops.size(); k++) {
            ExplorerRun.Op a = run.ops.get(k);
            if (a.s.kind == ExplorerStep.Kind.RESET && !a.thrown) {
                return;
            }
            if (a.markDeleteProperties != null && !a.behindMarkDelete && a.succeededBy(run.crashTick)) {
                newest = k;
            }
        }
        if (newest < 0 || s.markDeleteProperties == null) {
            return;
        }
        run.count("check.markDeletePropertiesVerified");
        ExplorerRun.Op n = run.ops.get(newest);
        if (s.markDeleteProperties.equals(n.markDeleteProperties)) {
            return;
        }
        for (int k = newest + 1; k < run.ops.size(); k++) {
            ExplorerRun.Op a = run.ops.get(k);
            Map<String, Long> written = a.markDeleteProperties != null ? a.markDeleteProperties : Map.of();
            if (isAck(a) && s.markDeleteProperties.equals(written)) {
                return;
            }
        }
        run.violations.add(new ExplorerRun.Violation("complete-mark-delete-properties-lost", "#" + newest + " step "
                + n.step + " " + n.label + " reported complete@" + n.fireTick + " but " + s.source
                + " has mark-delete properties " + s.markDeleteProperties + ", which no later operation wrote"));
    }

    // The last reset, when it succeeded and no earlier reset completed after it; otherwise null.
    private ExplorerRun.Op winningReset(List<ExplorerRun.Op> resets) {
        ExplorerRun.Op last = resets.isEmpty() ? null : resets.get(resets.size() - 1);
        if (last == null || !last.succeededBy(run.crashTick)) {
            return null;
        }
        for (ExplorerRun.Op r : resets) {
            if (r != last && !(r.fireTick != 0 && (r.failed || r.fireTick < last.fireTick))) {
                return null;
            }
        }
        return last;
    }

    // (c) the winning reset's mark-delete position is recovered.
    private void checkResetRecovered(ExplorerRun.Snapshot s, ExplorerRun.Op last) {
        run.count("check.resetVerified");
        if (s.markDelete < last.s.a - 1) {
            run.violations.add(new ExplorerRun.Violation("complete-reset-lost", "step " + last.step + " "
                    + last.label + " reported complete@" + last.fireTick + " (mark-delete "
                    + ExplorerReport.pos(last.s.a - 1) + ") but " + s.source + " markDelete="
                    + ExplorerReport.pos(s.markDelete)));
        }
    }

    // (c) nothing is deleted that no operation issued after the winning reset (or, without one, no operation and
    // no reset) could have deleted.
    private void checkDeletedAllowed(ExplorerRun.Snapshot s, List<ExplorerRun.Op> resets, ExplorerRun.Op last) {
        for (int e = 0; e < run.plan.entries; e++) {
            if (!s.deleted[e]) {
                continue;
            }
            boolean allowed;
            if (last != null) {
                allowed = e < last.s.a || coveredByOpsAfter(last.step, e);
            } else {
                allowed = coveredByOpsAfter(-1, e);
                for (ExplorerRun.Op r : resets) {
                    allowed |= e < r.s.a;
                }
            }
            if (allowed) {
                continue;
            }
            if (last != null) {
                run.violations.add(new ExplorerRun.Violation("reset-superseded-ack-recovered", "step " + last.step
                        + " " + last.label + " reported complete@" + last.fireTick + ", and no operation issued"
                        + " after it acks p" + e + ", yet " + s.source + " has p" + e + " deleted (markDelete="
                        + ExplorerReport.pos(s.markDelete) + ", deleted=" + run.report().deletedList(s) + ")"));
            } else {
                run.violations.add(new ExplorerRun.Violation("unacked-position-deleted", "no operation acked p" + e
                        + " and no reset moved past it, yet " + s.source + " has it deleted"));
            }
        }
    }

    static boolean isAck(ExplorerRun.Op op) {
        switch (op.s.kind) {
            case MARK_DELETE:
            case MARK_DELETE_PROPERTIES:
            case DELETE:
            case DELETE_LIST:
            case BATCH_ACK:
            case SKIP:
            case CLEAR_BACKLOG:
                return !op.thrown;
            default:
                return false;
        }
    }

    // What of the ack is missing from the state, or null.
    private String missing(ExplorerRun.Op a, ExplorerRun.Snapshot s) {
        switch (a.s.kind) {
            case MARK_DELETE:
            case MARK_DELETE_PROPERTIES:
            case SKIP:
            case CLEAR_BACKLOG:
                return s.markDelete >= a.upTo ? null
                        : "has markDelete=" + ExplorerReport.pos(s.markDelete) + " < " + ExplorerReport.pos(a.upTo);
            case DELETE:
            case DELETE_LIST: {
                List<String> lost = new ArrayList<>();
                for (int k : a.required) {
                    if (!s.deleted[k]) {
                        lost.add("p" + k);
                    }
                }
                return lost.isEmpty() ? null
                        : "has " + lost + " not deleted (markDelete=" + ExplorerReport.pos(s.markDelete) + ")";
            }
            case BATCH_ACK:
                return missingBatch(a, s);
            default:
                return null;
        }
    }

    private static String missingBatch(ExplorerRun.Op a, ExplorerRun.Snapshot s) {
        int k = a.s.a;
        if (s.deleted[k] || (s.batch[k] != null && subset(s.batch[k], a.s.remaining))) {
            return null;
        }
        return "has p" + k + " not deleted and its unacked batch indexes "
                + (s.batch[k] == null ? "absent (all unacked)" : BitSet.valueOf(s.batch[k]).toString())
                + ", not within " + BitSet.valueOf(new long[] {a.s.remaining});
    }

    // Could an operation issued after step {@code afterStep} (acks are applied in memory when issued) delete e?
    private boolean coveredByOpsAfter(int afterStep, int e) {
        for (ExplorerRun.Op op : run.ops) {
            if (op.step <= afterStep || op.thrown) {
                continue;
            }
            switch (op.s.kind) {
                case MARK_DELETE:
                case MARK_DELETE_PROPERTIES:
                case SKIP:
                case CLEAR_BACKLOG:
                    if (e <= op.upTo) {
                        return true;
                    }
                    break;
                case DELETE:
                case DELETE_LIST:
                case BATCH_ACK:
                    if (op.named.contains(e)) {
                        return true;
                    }
                    break;
                default:
                    break;
            }
        }
        return false;
    }

    // Is the "unacked" set {@code inner} within {@code outer} (every index acked by outer is acked by inner)?
    static boolean subset(long[] inner, long outer) {
        BitSet b = BitSet.valueOf(inner);
        b.andNot(BitSet.valueOf(new long[] {outer}));
        return b.isEmpty();
    }
}
