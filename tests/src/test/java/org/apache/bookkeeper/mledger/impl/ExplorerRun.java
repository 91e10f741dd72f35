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
import io.netty.buffer.ByteBuf;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.mledger.AsyncCallbacks;
import org.apache.bookkeeper.mledger.Entry;
import org.apache.bookkeeper.mledger.ManagedCursor;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.mledger.PositionFactory;
import org.apache.pulsar.metadata.api.Stat;
import org.awaitility.core.ConditionTimeoutException;

/**
 * One explored schedule on the real cursor: set-up, the seed's steps (each followed by quiescence), the
 * release of every hold, a crash recovery on the second factory, and the contract check.
 *
 * <p>The oracle is conservative. An ack is "complete" only when its callback reported success (not merely
 * accepted). It is exempt from the durability check when a reset that did not report failure completed after
 * the ack was issued (or never completed): that reset may legitimately supersede it. Acks that changed nothing
 * in memory when issued (already covered) are not checked.
 */
final class ExplorerRun {
    static final String CURSOR = "c1";
    private static final double NO_PERMIT_RATE = 0.001;

    /** One violation: a kind (the summary key) and a precise description. */
    static final class Violation {
        final String kind;
        final String detail;

        Violation(String kind, String detail) {
            this.kind = kind;
            this.detail = detail;
        }

        @Override
        public String toString() {
            return kind + ": " + detail;
        }
    }

    /** An issued operation and what its callback reported. */
    final class Op {
        final int step;
        final ExplorerStep s;
        final String label;
        final CallbackProbe.Outcome outcome;
        long issueTick;
        volatile long fireTick;
        volatile boolean failed;
        volatile String failure;
        boolean thrown;
        boolean redundant;
        // Entry indexes this ack deletes that were not deleted in memory when it was issued.
        final List<Integer> required = new ArrayList<>();
        // Every entry index it names (DELETE, DELETE_LIST, BATCH_ACK), for the "who deleted this" check.
        final List<Integer> named = new ArrayList<>();
        // MARK_DELETE: its index; SKIP, CLEAR_BACKLOG: the mark-delete index right after the call.
        int upTo = -2;
        String key;

        Op(int step, ExplorerStep s, String label) {
            this.step = step;
            this.s = s;
            this.label = label;
            this.outcome = probe.newOutcome("step " + step + " " + label);
        }

        void fire(Throwable t) {
            if (Thread.holdsLock(cursor.pendingMarkDeleteOps) || cursorLock.isWriteLockedByCurrentThread()
                    || cursorLock.getReadHoldCount() > 0) {
                lockSites.putIfAbsent(outcome.name, site());
            }
            if (fireTick == 0) {
                failed = t != null;
                failure = t == null ? null : t.getClass().getSimpleName() + ": " + t.getMessage();
                fireTick = clock.incrementAndGet();
            }
            outcome.fired(t);
        }

        boolean succeededBy(long tick) {
            return fireTick != 0 && !failed && fireTick <= tick;
        }

        String status() {
            String accepted = outcome.accepted.isDone() ? " accepted," : "";
            if (thrown) {
                return "threw";
            } else if (fireTick == 0) {
                return accepted + " pending";
            } else if (failed) {
                return accepted + " failed@" + fireTick + " (" + failure + ")";
            } else {
                return accepted + " complete@" + fireTick;
            }
        }
    }

    /** What the cursor holds: recovered by a crash (durable) or live (non-durable). */
    static final class Snapshot {
        int markDelete;
        boolean[] deleted;
        long[][] batch;
        Map<String, String> properties = Map.of();
        String source;
    }

    private final ExplorerStep.Plan plan;
    private final ManagedLedgerFactoryImpl live;
    private final ManagedLedgerFactoryImpl recovery;
    private final ExplorerHarness h;
    private final String name;
    private final boolean ours;
    private final boolean verbose;
    private final Map<String, Integer> coverage;
    private final long hangMillis;
    private final AtomicLong clock = new AtomicLong();
    private final List<Op> ops = new ArrayList<>();
    private final List<Violation> violations = new ArrayList<>();
    private final List<String> trace = new ArrayList<>();
    private ManagedLedger ledger;
    private ManagedLedger recoveredLedger;
    private ManagedCursorImpl cursor;
    private CallbackProbe probe;
    private ReentrantReadWriteLock cursorLock;
    private final Map<String, String> lockSites = new ConcurrentHashMap<>();
    private final List<Position> p = new ArrayList<>();
    private long ledgerId;
    private boolean closeIssued;
    private long crashTick = Long.MAX_VALUE;

    ExplorerRun(ExplorerStep.Plan plan, ManagedLedgerFactoryImpl live, ManagedLedgerFactoryImpl recovery,
            ExplorerHarness h, String name, boolean ours, boolean verbose, Map<String, Integer> coverage,
            long hangMillis) {
        this.plan = plan;
        this.live = live;
        this.recovery = recovery;
        this.h = h;
        this.name = name;
        this.ours = ours;
        this.verbose = verbose;
        this.coverage = coverage;
        this.hangMillis = hangMillis;
    }

    List<Violation> violations() {
        return violations;
    }

    /** The steps with each operation's outcome; with {@code verbose}, the cursor's state after each step. */
    String trace() {
        StringBuilder sb = new StringBuilder();
        sb.append("seed ").append(plan.seed).append(" (").append(plan.durable ? "durable" : "non-durable")
                .append(" cursor, entries p0..p").append(plan.entries - 1).append(")\n");
        for (String line : trace) {
            sb.append("  ").append(line).append('\n');
        }
        return sb.toString();
    }

    void run() throws Exception {
        ledger = live.open(name, new ManagedLedgerConfig());
        if (plan.durable) {
            cursor = (ManagedCursorImpl) ledger.openCursor(CURSOR);
            cursor.setInactive();
        }
        List<CompletableFuture<Position>> added = new ArrayList<>();
        for (int i = 0; i < plan.entries; i++) {
            CompletableFuture<Position> f = new CompletableFuture<>();
            added.add(f);
            ledger.asyncAddEntry(("e" + i).getBytes(), new AsyncCallbacks.AddEntryCallback() {
                @Override
                public void addComplete(Position position, ByteBuf entryData, Object ctx) {
                    f.complete(position);
                }

                @Override
                public void addFailed(ManagedLedgerException exception, Object ctx) {
                    f.completeExceptionally(exception);
                }
            }, null);
        }
        for (CompletableFuture<Position> f : added) {
            p.add(f.get(10, TimeUnit.SECONDS));
        }
        if (!plan.durable) {
            cursor = (ManagedCursorImpl) ledger.newNonDurableCursor(PositionFactory.EARLIEST);
            cursor.setInactive();
        }
        ledgerId = p.get(0).getLedgerId();
        probe = new CallbackProbe(cursor);
        cursorLock = (ReentrantReadWriteLock) ExplorerHarness.field(ManagedCursorImpl.class, "lock").get(cursor);
        count(plan.durable ? "schedule.durable" : "schedule.nonDurable");

        boolean crashed = false;
        for (int i = 0; i < plan.steps.size(); i++) {
            ExplorerStep s = plan.steps.get(i);
            count(s.kind.name());
            if (s.kind == ExplorerStep.Kind.CRASH) {
                trace.add(i + ": CRASH" + (verbose ? "   [" + state() + "]" : ""));
                crashed = true;
                break;
            }
            Op op = null;
            try {
                op = apply(i, s);
            } catch (Throwable t) {
                if (!ops.isEmpty() && ops.get(ops.size() - 1).step == i) {
                    ops.get(ops.size() - 1).thrown = true;
                }
                violations.add(new Violation("exception-escaped:" + s.kind,
                        "step " + i + " " + s + " threw " + t));
            }
            boolean quiet = h.settle(this::fingerprint);
            String line = i + ": " + s + (op != null ? " #" + ops.indexOf(op) : "") + (quiet ? "" : " (not quiescent)");
            trace.add(verbose ? line + "   [" + state() + "]" : line);
        }

        Snapshot snapshot;
        if (crashed) {
            // Adds already held stay held while the second factory recovers (nothing the old cursor does after
            // the crash can change what was recovered).
            crashTick = clock.get();
            h.stopHoldingNewReads();
            h.dropMetadataFaults();
            h.dropUntakenAdds();
            trace.add("stored at the crash: " + storedRecord());
            snapshot = recover("recovered after a crash at the last step");
            releaseEverything();
            // The crashed cursor still runs: a flush settles what its limiter holds (its writes now fail: the
            // recovery fenced its ledger), so that every callback can be checked.
            if (plan.durable && !closeIssued) {
                cursor.flush();
                h.settle(this::fingerprint);
            }
            closeQuietly(recoveredLedger);
        } else {
            releaseEverything();
            if (plan.durable && !closeIssued) {
                cursor.flush();
                h.settle(this::fingerprint);
            }
            awaitOutcomes();
            if (plan.durable && ours) {
                int held = ExplorerHarness.acceptedNotDurable(cursor);
                if (held > 0) {
                    violations.add(new Violation("held-acks-not-drained",
                            "getAcceptedNotDurableCount() = " + held + " after every hold was released and a flush"
                                    + " ran (dirty=" + ExplorerHarness.dirty(cursor) + ", state=" + cursor.getState()
                                    + ")"));
                }
            }
            snapshot = plan.durable ? recover("recovered after the schedule") : liveSnapshot();
            closeQuietly(recoveredLedger);
        }
        if (crashed) {
            awaitOutcomes();
        }
        for (int k = 0; k < ops.size(); k++) {
            Op op = ops.get(k);
            trace.add("#" + k + " step " + op.step + " " + op.label + ":" + op.status());
        }
        if (snapshot != null) {
            trace.add(snapshot.source + ": markDelete=" + pos(snapshot.markDelete) + " deleted=" + deletedList(snapshot)
                    + batchList(snapshot));
            check(snapshot);
        }
        for (String v : probe.violations) {
            String where = "";
            for (Map.Entry<String, String> e : lockSites.entrySet()) {
                if (v.startsWith(e.getKey() + " ")) {
                    where = ", called from " + e.getValue();
                }
            }
            violations.add(new Violation(probeKind(v), v + where));
        }
        for (Op op : ops) {
            if (op.outcome.accepted.isDone()) {
                count("signal.accepted");
            }
            if (op.s.kind == ExplorerStep.Kind.RESET && op.fireTick != 0) {
                count(op.failed ? "reset.failed" : "reset.complete");
            }
        }
        closeQuietly(ledger);
    }

    // ---- steps ----

    private Op apply(int step, ExplorerStep s) throws Exception {
        switch (s.kind) {
            case MARK_DELETE: {
                final Op op = issue(step, s, s.toString());
                op.upTo = s.a;
                op.redundant = index(cursor.getMarkDeletedPosition()) >= s.a;
                op.required.add(s.a);
                op.issueTick = clock.incrementAndGet();
                cursor.asyncMarkDelete(p.get(s.a), markDeleteCallback(op), null);
                return op;
            }
            case DELETE:
            case DELETE_LIST: {
                final Op op = issue(step, s, s.toString());
                Set<Integer> idx = new LinkedHashSet<>();
                idx.add(s.a);
                if (s.more != null) {
                    for (int m : s.more) {
                        idx.add(m);
                    }
                }
                List<Position> positions = new ArrayList<>();
                for (int k : idx) {
                    positions.add(p.get(k));
                    op.named.add(k);
                    if (!cursor.isMessageDeleted(p.get(k))) {
                        op.required.add(k);
                    }
                }
                op.redundant = op.required.isEmpty();
                op.issueTick = clock.incrementAndGet();
                if (s.kind == ExplorerStep.Kind.DELETE) {
                    cursor.asyncDelete(positions.get(0), deleteCallback(op), null);
                } else {
                    cursor.asyncDelete(positions, deleteCallback(op), null);
                }
                return op;
            }
            case BATCH_ACK: {
                final Op op = issue(step, s, s.toString());
                op.named.add(s.a);
                op.required.add(s.a);
                long[] current = cursor.getDeletedBatchIndexesAsLongArray(p.get(s.a));
                op.redundant = cursor.isMessageDeleted(p.get(s.a))
                        || (current != null && subset(current, s.remaining));
                Position withAckSet = AckSetStateUtil.createPositionWithAckSet(ledgerId, s.a,
                        new long[] {s.remaining});
                op.issueTick = clock.incrementAndGet();
                cursor.asyncDelete(withAckSet, deleteCallback(op), null);
                return op;
            }
            case RESET: {
                final Op op = issue(step, s, s.toString());
                op.issueTick = clock.incrementAndGet();
                cursor.asyncResetCursor(p.get(s.a), false, resetCallback(op));
                return op;
            }
            case SKIP: {
                final Op op = issue(step, s, s.toString());
                int before = index(cursor.getMarkDeletedPosition());
                op.issueTick = clock.incrementAndGet();
                cursor.asyncSkipEntries(s.a, ManagedCursor.IndividualDeletedEntries.Exclude,
                        new AsyncCallbacks.SkipEntriesCallback() {
                            @Override
                            public void skipEntriesComplete(Object ctx) {
                                op.fire(null);
                            }

                            @Override
                            public void skipEntriesFailed(ManagedLedgerException exception, Object ctx) {
                                op.fire(exception);
                            }
                        }, null);
                op.upTo = index(cursor.getMarkDeletedPosition());
                op.redundant = op.upTo <= before;
                return op;
            }
            case CLEAR_BACKLOG: {
                final Op op = issue(step, s, s.toString());
                int before = index(cursor.getMarkDeletedPosition());
                op.issueTick = clock.incrementAndGet();
                cursor.asyncClearBacklog(new AsyncCallbacks.ClearBacklogCallback() {
                    @Override
                    public void clearBacklogComplete(Object ctx) {
                        op.fire(null);
                    }

                    @Override
                    public void clearBacklogFailed(ManagedLedgerException exception, Object ctx) {
                        op.fire(exception);
                    }
                }, null);
                op.upTo = index(cursor.getMarkDeletedPosition());
                op.redundant = op.upTo <= before;
                return op;
            }
            case PUT_PROPERTY: {
                final Op op = issue(step, s, "putCursorProperty(k" + step + ", v" + step + ")");
                op.key = "k" + step;
                op.issueTick = clock.incrementAndGet();
                cursor.putCursorProperty(op.key, "v" + step).whenComplete((v, t) -> op.fire(t));
                return op;
            }
            case CLOSE: {
                final Op op = issue(step, s, s.toString());
                closeIssued = true;
                op.issueTick = clock.incrementAndGet();
                cursor.asyncClose(new AsyncCallbacks.CloseCallback() {
                    @Override
                    public void closeComplete(Object ctx) {
                        op.fire(null);
                    }

                    @Override
                    public void closeFailed(ManagedLedgerException exception, Object ctx) {
                        op.fire(exception);
                    }
                }, null);
                return op;
            }
            case HOLD_READ: {
                if (h.readsHeld()) {
                    return null;
                }
                h.holdReads();
                final Op op = issue(step, s, "asyncReadEntries(1) under held reads");
                op.issueTick = clock.incrementAndGet();
                cursor.asyncReadEntries(1, new AsyncCallbacks.ReadEntriesCallback() {
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
            case RELEASE_READ:
                h.releaseReads();
                return null;
            case FLUSH:
                cursor.flush();
                return null;
            case THROTTLE:
                cursor.setThrottleMarkDelete(NO_PERMIT_RATE);
                return null;
            case HOLD_ADD:
                h.holdAdd();
                return null;
            case COMPLETE_HELD_ADD:
            case FAIL_HELD_ADD: {
                String what = h.releaseFirstHold(s.kind == ExplorerStep.Kind.FAIL_HELD_ADD,
                        BKException.Code.NotEnoughBookiesException);
                if (what != null) {
                    count("heldAdd." + what);
                }
                return null;
            }
            case FAIL_NEXT_ADD:
                h.failAdd(BKException.Code.NotEnoughBookiesException);
                return null;
            case FAIL_METADATA:
                h.failNextCursorPut(name, CURSOR);
                return null;
            default:
                throw new IllegalStateException(s.kind.name());
        }
    }

    private Op issue(int step, ExplorerStep s, String label) {
        Op op = new Op(step, s, label);
        ops.add(op);
        return op;
    }

    private AsyncCallbacks.MarkDeleteCallback markDeleteCallback(Op op) {
        return new AsyncCallbacks.MarkDeleteCallback() {
            @Override
            public void markDeleteComplete(Object ctx) {
                op.fire(null);
            }

            @Override
            public void markDeleteFailed(ManagedLedgerException exception, Object ctx) {
                op.fire(exception);
            }

            @Override
            public void markDeleteAccepted(Object ctx) {
                op.outcome.accepted();
            }
        };
    }

    private AsyncCallbacks.DeleteCallback deleteCallback(Op op) {
        return new AsyncCallbacks.DeleteCallback() {
            @Override
            public void deleteComplete(Object ctx) {
                op.fire(null);
            }

            @Override
            public void deleteFailed(ManagedLedgerException exception, Object ctx) {
                op.fire(exception);
            }

            @Override
            public void deleteAccepted(Object ctx) {
                op.outcome.accepted();
            }
        };
    }

    private AsyncCallbacks.ResetCursorCallback resetCallback(Op op) {
        return new AsyncCallbacks.ResetCursorCallback() {
            @Override
            public void resetComplete(Object ctx) {
                op.fire(null);
            }

            @Override
            public void resetFailed(ManagedLedgerException exception, Object ctx) {
                op.fire(exception);
            }
        };
    }

    // ---- end of the schedule ----

    // Unclaimed faults are dropped first, then the held read, then each held add in order, each followed by
    // quiescence: the end of a schedule is as deterministic as its steps.
    private void releaseEverything() {
        h.dropMetadataFaults();
        h.dropUnclaimedAddFaults();
        h.settle(this::fingerprint);
        if (h.readsHeld()) {
            h.releaseReads();
            h.settle(this::fingerprint);
        }
        while (h.releaseFirstHold(false, 0) != null) {
            h.settle(this::fingerprint);
        }
        h.releaseAllAdds();
        h.settle(this::fingerprint);
    }

    // Everything is released and quiescent: what has not fired by now waits for nothing but a timer (the
    // limiter's scheduled write, 1000 s away at 0.001/s). The grace period bounds the wait.
    private void awaitOutcomes() {
        h.settle(this::fingerprint);
        if (!allFired()) {
            try {
                await().atMost(Duration.ofMillis(hangMillis)).pollInterval(Duration.ofMillis(5))
                        .until(this::allFired);
            } catch (ConditionTimeoutException e) {
                // reported below
            }
        }
        // Our limiter may still hold acks (an ack the limiter holds waits for a write that holds it, at worst the
        // scheduled one 1000 s away): those are reported by the held-ack check, not here. Skips and clear-backlog
        // hear no "accepted" (their internal callback does not pass it on), so they count as possibly held too.
        int held = plan.durable ? ExplorerHarness.acceptedNotDurable(cursor) : -1;
        for (int k = 0; k < ops.size(); k++) {
            Op op = ops.get(k);
            if (!op.thrown && op.fireTick == 0 && held > 0 && isAck(op)) {
                count("check.pendingAckPossiblyHeld");
                continue;
            }
            if (!op.thrown && op.fireTick == 0) {
                violations.add(new Violation("callback-never-fired:" + op.s.kind,
                        "#" + k + " step " + op.step + " " + op.label + " was never called back (" + op.status().trim()
                                + ") although every hold was released " + hangMillis + " ms ago; cursor state="
                                + cursor.getState() + ", queued=" + ExplorerHarness.queued(cursor) + ", writesInFlight="
                                + ExplorerHarness.writesInFlight(cursor)));
            }
        }
    }

    private boolean allFired() {
        for (Op op : ops) {
            if (!op.thrown && op.fireTick == 0) {
                return false;
            }
        }
        return true;
    }

    // What recovery starts from: the cursor's metadata-store record and whether the cursor ledger it names exists.
    // The record's class differs between lines (protobuf on 4.0, LightProto from 4.1): read through its getters.
    @SuppressWarnings({"rawtypes", "unchecked"})
    private String storedRecord() {
        CompletableFuture<String> info = new CompletableFuture<>();
        ((ManagedLedgerImpl) ledger).getStore().asyncGetCursorInfo(name, CURSOR, new MetaStore.MetaStoreCallback() {
            @Override
            public void operationComplete(Object i, Stat stat) {
                try {
                    long cursorLedger = (long) getter(i, "getCursorsLedgerId");
                    info.complete("cursorLedger=" + cursorLedger + (cursorLedger < 0 ? ""
                            : h.ledgerExists(cursorLedger) ? " (" + h.ledgerEntries(cursorLedger) + " entries)"
                            : " (deleted)") + " markDelete=" + getter(i, "getMarkDeleteLedgerId") + ":"
                            + getter(i, "getMarkDeleteEntryId") + " ranges="
                            + getter(i, "getIndividualDeletedMessagesCount") + " version=" + stat.getVersion());
                } catch (ReflectiveOperationException e) {
                    info.complete("unreadable: " + e);
                }
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

    private static Object getter(Object target, String method) throws ReflectiveOperationException {
        return target.getClass().getMethod(method).invoke(target);
    }

    // Opens the ledger on the second factory (left open in recoveredLedger: its close writes, and must wait
    // until the holds are released).
    private Snapshot recover(String source) {
        try {
            CompletableFuture<ManagedLedger> opened = new CompletableFuture<>();
            recovery.asyncOpen(name, new AsyncCallbacks.OpenLedgerCallback() {
                @Override
                public void openLedgerComplete(ManagedLedger l, Object ctx) {
                    opened.complete(l);
                }

                @Override
                public void openLedgerFailed(ManagedLedgerException exception, Object ctx) {
                    opened.completeExceptionally(exception);
                }
            }, null);
            recoveredLedger = opened.get(10, TimeUnit.SECONDS);
            ManagedCursorImpl recovered = (ManagedCursorImpl) recoveredLedger.openCursor(CURSOR);
            Snapshot s = snapshotOf(recovered, source);
            s.properties = new HashMap<>(recovered.getCursorProperties());
            return s;
        } catch (Exception e) {
            violations.add(new Violation("recovery-failed", source + ": " + e));
            return null;
        }
    }

    private Snapshot liveSnapshot() {
        return snapshotOf(cursor, "live non-durable cursor after the schedule");
    }

    private Snapshot snapshotOf(ManagedCursorImpl c, String source) {
        Snapshot s = new Snapshot();
        s.source = source;
        s.markDelete = index(c.getMarkDeletedPosition());
        s.deleted = new boolean[plan.entries];
        s.batch = new long[plan.entries][];
        for (int k = 0; k < plan.entries; k++) {
            s.deleted[k] = c.isMessageDeleted(p.get(k));
            s.batch[k] = c.getDeletedBatchIndexesAsLongArray(p.get(k));
        }
        // Entries deleted right after the mark-delete position count as mark-deleted: a record written at an
        // older position holds the acks absorbed past it as the range (written, mark-delete].
        while (s.markDelete + 1 < plan.entries && s.deleted[s.markDelete + 1]) {
            s.markDelete++;
        }
        return s;
    }

    private static void closeQuietly(ManagedLedger l) {
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

    private void check(Snapshot s) {
        List<Op> resets = new ArrayList<>();
        for (Op op : ops) {
            if (op.s.kind == ExplorerStep.Kind.RESET && !op.thrown) {
                resets.add(op);
            }
        }
        // (b) every complete ack is in the state, unless a reset that may have succeeded completed after it was
        // issued (or never completed).
        for (int k = 0; k < ops.size(); k++) {
            Op a = ops.get(k);
            if (!isAck(a) || a.redundant || !a.succeededBy(crashTick)) {
                continue;
            }
            Op supersededBy = null;
            for (Op r : resets) {
                boolean mayHaveLanded = !(r.fireTick != 0 && r.failed);
                if (mayHaveLanded && (r.fireTick == 0 || r.fireTick > a.issueTick)) {
                    supersededBy = r;
                    break;
                }
            }
            if (supersededBy != null) {
                count("check.ackExemptByReset");
                continue;
            }
            count("check.completeAckVerified");
            String missing = missing(a, s);
            if (missing != null) {
                violations.add(new Violation("complete-ack-lost:" + a.s.kind + (a.outcome.accepted.isDone()
                        ? "(accepted first)" : ""), "#" + k + " step " + a.step + " " + a.label + " reported complete@"
                        + a.fireTick + " but " + s.source + " " + missing));
            }
        }
        for (int k = 0; k < ops.size(); k++) {
            Op a = ops.get(k);
            if (a.s.kind == ExplorerStep.Kind.PUT_PROPERTY && a.succeededBy(crashTick)) {
                String value = s.properties.get(a.key);
                if (!("v" + a.step).equals(value)) {
                    violations.add(new Violation("complete-cursor-property-lost", "#" + k + " step " + a.step + " "
                            + a.label + " reported complete@" + a.fireTick + " but " + s.source + " has "
                            + a.key + "=" + value));
                }
            }
        }
        // (c) the last reset, when it succeeded and no earlier reset completed after it: its mark-delete position
        // is recovered, and nothing is deleted that no operation issued after it could have deleted.
        Op last = resets.isEmpty() ? null : resets.get(resets.size() - 1);
        boolean lastWins = last != null && last.succeededBy(crashTick);
        if (lastWins) {
            for (Op r : resets) {
                if (r != last && !(r.fireTick != 0 && (r.failed || r.fireTick < last.fireTick))) {
                    lastWins = false;
                }
            }
        }
        if (lastWins) {
            count("check.resetVerified");
            if (s.markDelete < last.s.a - 1) {
                violations.add(new Violation("complete-reset-lost", "step " + last.step + " " + last.label
                        + " reported complete@" + last.fireTick + " (mark-delete " + pos(last.s.a - 1) + ") but "
                        + s.source + " markDelete=" + pos(s.markDelete)));
            }
        }
        for (int e = 0; e < plan.entries; e++) {
            if (!s.deleted[e]) {
                continue;
            }
            boolean allowed;
            if (lastWins) {
                allowed = e < last.s.a || coveredByOpsAfter(last.step, e);
            } else {
                allowed = coveredByOpsAfter(-1, e);
                for (Op r : resets) {
                    allowed |= e < r.s.a;
                }
            }
            if (!allowed) {
                if (lastWins) {
                    violations.add(new Violation("reset-superseded-ack-recovered", "step " + last.step + " "
                            + last.label + " reported complete@" + last.fireTick + ", and no operation issued after"
                            + " it acks p" + e + ", yet " + s.source + " has p" + e + " deleted (markDelete="
                            + pos(s.markDelete) + ", deleted=" + deletedList(s) + ")"));
                } else {
                    violations.add(new Violation("unacked-position-deleted", "no operation acked p" + e
                            + " and no reset moved past it, yet " + s.source + " has it deleted"));
                }
            }
        }
    }

    private static boolean isAck(Op op) {
        switch (op.s.kind) {
            case MARK_DELETE:
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
    private String missing(Op a, Snapshot s) {
        switch (a.s.kind) {
            case MARK_DELETE:
            case SKIP:
            case CLEAR_BACKLOG:
                return s.markDelete >= a.upTo ? null : "has markDelete=" + pos(s.markDelete) + " < " + pos(a.upTo);
            case DELETE:
            case DELETE_LIST: {
                List<String> lost = new ArrayList<>();
                for (int k : a.required) {
                    if (!s.deleted[k]) {
                        lost.add("p" + k);
                    }
                }
                return lost.isEmpty() ? null : "has " + lost + " not deleted (markDelete=" + pos(s.markDelete) + ")";
            }
            case BATCH_ACK: {
                int k = a.s.a;
                if (s.deleted[k] || (s.batch[k] != null && subset(s.batch[k], a.s.remaining))) {
                    return null;
                }
                return "has p" + k + " not deleted and its unacked batch indexes "
                        + (s.batch[k] == null ? "absent (all unacked)" : BitSet.valueOf(s.batch[k]).toString())
                        + ", not within " + BitSet.valueOf(new long[] {a.s.remaining});
            }
            default:
                return null;
        }
    }

    // Could an operation issued after step {@code afterStep} (acks are applied in memory when issued) delete e?
    private boolean coveredByOpsAfter(int afterStep, int e) {
        for (Op op : ops) {
            if (op.step <= afterStep || op.thrown) {
                continue;
            }
            switch (op.s.kind) {
                case MARK_DELETE:
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
    private static boolean subset(long[] inner, long outer) {
        BitSet b = BitSet.valueOf(inner);
        b.andNot(BitSet.valueOf(new long[] {outer}));
        return b.isEmpty();
    }

    // The managed-ledger frames that called back (the first three outside this explorer).
    private static String site() {
        StringBuilder sb = new StringBuilder();
        int n = 0;
        for (StackTraceElement e : new Throwable().getStackTrace()) {
            String c = e.getClassName();
            if (c.startsWith("org.apache.bookkeeper.mledger.impl.Explorer") || c.contains("CallbackProbe")
                    || !c.startsWith("org.apache.bookkeeper.mledger")) {
                continue;
            }
            sb.append(n == 0 ? "" : " < ").append(c.substring(c.lastIndexOf('.') + 1)).append('.')
                    .append(e.getMethodName()).append(':').append(e.getLineNumber());
            if (++n == 3) {
                break;
            }
        }
        return sb.toString();
    }

    private static String probeKind(String v) {
        if (v.contains("while holding the pendingMarkDeleteOps monitor")) {
            return "callback-under-pendingMarkDeleteOps-monitor";
        } else if (v.contains("while holding the cursor lock")) {
            return "callback-under-cursor-lock";
        } else if (v.contains(" times")) {
            return "callback-fired-more-than-once";
        } else if (v.contains("accepted")) {
            return "accepted-signal-misordered";
        }
        return "probe";
    }

    // ---- state ----

    private int index(Position pos) {
        if (pos == null) {
            return -1;
        }
        if (pos.getLedgerId() < ledgerId) {
            return -1;
        }
        if (pos.getLedgerId() > ledgerId) {
            return plan.entries - 1;
        }
        return (int) Math.min(pos.getEntryId(), plan.entries - 1);
    }

    private static String pos(int index) {
        return index < 0 ? "before-p0" : "p" + index;
    }

    private String deletedList(Snapshot s) {
        List<String> d = new ArrayList<>();
        for (int k = s.markDelete + 1; k < plan.entries; k++) {
            if (s.deleted[k]) {
                d.add("p" + k);
            }
        }
        return d.toString();
    }

    private String batchList(Snapshot s) {
        StringBuilder sb = new StringBuilder();
        for (int k = 0; k < plan.entries; k++) {
            if (s.batch[k] != null) {
                sb.append(" batch(p").append(k).append(")unacked=").append(BitSet.valueOf(s.batch[k]));
            }
        }
        return sb.toString();
    }

    private long fingerprint() {
        long f = 17;
        f = f * 31 + ExplorerHarness.writesInFlight(cursor);
        f = f * 31 + ExplorerHarness.queued(cursor);
        f = f * 31 + ExplorerHarness.pendingReadOps(cursor);
        f = f * 31 + cursor.getMarkDeletedPosition().hashCode();
        f = f * 31 + cursor.getReadPosition().hashCode();
        f = f * 31 + cursor.getState().hashCode();
        f = f * 31 + (ExplorerHarness.dirty(cursor) ? 1 : 0);
        f = f * 31 + ExplorerHarness.acceptedNotDurable(cursor);
        f = f * 31 + cursor.getStats().getPersistLedgerSucceed();
        f = f * 31 + cursor.getStats().getPersistLedgerErrors();
        f = f * 31 + cursor.getStats().getPersistZookeeperSucceed();
        f = f * 31 + cursor.getStats().getPersistZookeeperErrors();
        f = f * 31 + h.pendingAddInjections();
        f = f * 31 + clock.get();
        return f;
    }

    private String state() {
        int held = ExplorerHarness.acceptedNotDurable(cursor);
        return "md=" + pos(index(cursor.getMarkDeletedPosition())) + " rp=p" + cursor.getReadPosition().getEntryId()
                + " queued=" + ExplorerHarness.queued(cursor) + " inFlight=" + ExplorerHarness.writesInFlight(cursor)
                + " reads=" + ExplorerHarness.pendingReadOps(cursor) + " heldAdds=" + h.heldAdds()
                + (held >= 0 ? " held=" + held : "") + " dirty=" + ExplorerHarness.dirty(cursor) + " state="
                + cursor.getState() + " fired=" + firedList();
    }

    private String firedList() {
        StringBuilder sb = new StringBuilder();
        for (int k = 0; k < ops.size(); k++) {
            Op op = ops.get(k);
            sb.append(k == 0 ? "" : ",").append('#').append(k)
                    .append(op.fireTick == 0 ? (op.outcome.accepted.isDone() ? "a" : "-") : op.failed ? "F" : "ok");
        }
        return sb.toString();
    }

    private void count(String key) {
        coverage.merge(key, 1, Integer::sum);
    }
}
