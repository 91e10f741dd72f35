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

import io.netty.buffer.ByteBuf;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.apache.bookkeeper.mledger.AsyncCallbacks;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.mledger.PositionFactory;

/**
 * One explored schedule on the real cursor: set-up, the seed's steps (each followed by quiescence), the
 * release of every hold, a crash recovery on the second factory, and the contract check.
 *
 * <p>This class holds the run's state and its order of events. The concerns are in their own classes:
 * {@link ExplorerInterpreter} issues the cursor operations, {@link ExplorerFaults} injects and releases the
 * environment's holds and faults, {@link ExplorerOracle} recovers the cursor and checks the contract, and
 * {@link ExplorerReport} describes the run. A new operation or fault is a new {@link ExplorerStep.Kind} and a
 * case in the interpreter or the fault injector.
 */
final class ExplorerRun {
    static final String CURSOR = "c1";

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
        // MARK_DELETE_PROPERTIES: the properties it passes, unique to the step, so that two mark-deletes at one
        // position differ; and whether the mark-delete position was already past it (then it writes nothing).
        Map<String, Long> markDeleteProperties;
        boolean behindMarkDelete;
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
                lockSites.putIfAbsent(outcome.name, ExplorerReport.site());
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
        // The recovered mark-delete properties; null for the live non-durable cursor.
        Map<String, Long> markDeleteProperties;
        String source;
    }

    final ExplorerStep.Plan plan;
    final ManagedLedgerFactoryImpl live;
    final ManagedLedgerFactoryImpl recovery;
    final ExplorerHarness h;
    final String name;
    final boolean ours;
    final boolean verbose;
    final Map<String, Integer> coverage;
    final long hangMillis;
    final AtomicLong clock = new AtomicLong();
    final List<Op> ops = new ArrayList<>();
    final List<Violation> violations = new ArrayList<>();
    final List<String> trace = new ArrayList<>();
    final Map<String, String> lockSites = new ConcurrentHashMap<>();
    final List<Position> p = new ArrayList<>();
    ManagedLedger ledger;
    ManagedLedger recoveredLedger;
    ManagedCursorImpl cursor;
    CallbackProbe probe;
    ReentrantReadWriteLock cursorLock;
    long ledgerId;
    boolean closeIssued;
    long crashTick = Long.MAX_VALUE;
    // The cursor ledger last seen (-1: none yet).
    private long cursorLedgerId = -1;
    // A durable cursor's ack issued on a second thread that stops before the queue (PARK); null otherwise.
    private ExplorerParkedAck parkedAck;
    // A PARK step came: the next ack step is issued on the parking thread.
    private boolean parkNext;
    // A thread of the cursor still ran after everything was released: the factory's threads may be stuck too.
    private boolean aborted;

    private final ExplorerInterpreter interpreter;
    private final ExplorerFaults faults;
    private final ExplorerOracle oracle;
    private final ExplorerReport report;

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
        this.interpreter = new ExplorerInterpreter(this);
        this.faults = new ExplorerFaults(this);
        this.oracle = new ExplorerOracle(this);
        this.report = new ExplorerReport(this);
    }

    List<Violation> violations() {
        return violations;
    }

    /** Whether the schedule ended without its checks: no later schedule on the same factory can be trusted. */
    boolean aborted() {
        return aborted;
    }

    /** The steps with each operation's outcome; with {@code verbose}, the cursor's state after each step. */
    String trace() {
        return report.trace();
    }

    ExplorerReport report() {
        return report;
    }

    void run() throws Exception {
        setUp();
        int crashStep;
        Snapshot snapshot;
        try {
            crashStep = runSteps();
            snapshot = crashStep >= 0 ? endWithCrash(crashStep) : endWithoutCrash();
        } catch (Aborted a) {
            // Its violation is recorded; the cursor's monitor may still be held, so nothing else runs.
            trace.add("aborted: " + a.getMessage());
            aborted = true;
            return;
        }
        report.outcomes();
        if (snapshot != null) {
            report.snapshot(snapshot);
            oracle.check(snapshot);
        }
        report.probeViolations();
        report.countSignals();
        ExplorerOracle.closeQuietly(ledger);
    }

    // The ledger with its entries, and the cursor: a durable one before the entries, a non-durable one after.
    private void setUp() throws Exception {
        ledger = live.open(name, config());
        if (plan.durable) {
            cursor = (ManagedCursorImpl) ledger.openCursor(CURSOR);
            cursor.setInactive();
            parkedAck = new ExplorerParkedAck(this, cursor);
        }
        addEntries();
        if (!plan.durable) {
            cursor = (ManagedCursorImpl) ledger.newNonDurableCursor(PositionFactory.EARLIEST);
            cursor.setInactive();
        }
        ledgerId = p.get(0).getLedgerId();
        probe = new CallbackProbe(cursor);
        cursorLock = (ReentrantReadWriteLock) ExplorerHarness.field(ManagedCursorImpl.class, "lock").get(cursor);
        count(plan.durable ? "schedule.durable" : "schedule.nonDurable");
        if (plan.profile != ExplorerStep.Profile.STANDARD) {
            count("schedule." + plan.profile.label);
        }
        if (plan.cap != null) {
            count("schedule.smallCaps");
        }
        if (plan.switchAfter != null) {
            count("schedule.ledgerSwitches");
        }
    }

    private ManagedLedgerConfig config() {
        ManagedLedgerConfig config = new ManagedLedgerConfig();
        if (plan.cap != null) {
            config.setMaxUnackedRangesToPersist(plan.cap);
            config.setMaxUnackedRangesToPersistInMetadataStore(plan.cap);
            config.setMaxBatchDeletedIndexToPersist(plan.cap);
        }
        if (plan.switchAfter != null) {
            config.setMetadataMaxEntriesPerLedger(plan.switchAfter);
        }
        return config;
    }

    private void addEntries() throws Exception {
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
    }

    // The steps, each followed by quiescence; the step of the crash that ended the schedule, or -1.
    private int runSteps() {
        for (int i = 0; i < plan.steps.size(); i++) {
            ExplorerStep s = plan.steps.get(i);
            count(s.kind.name());
            if (s.kind == ExplorerStep.Kind.CRASH) {
                trace.add(i + ": CRASH" + (verbose ? "   [" + report.state() + "]" : ""));
                return i;
            }
            if (s.kind == ExplorerStep.Kind.DRAIN) {
                drain(i);
                trace.add(i + ": " + s + (verbose ? "   [" + report.state() + "]" : ""));
                continue;
            }
            Op op = null;
            try {
                op = issueStep(i, s);
            } catch (Aborted a) {
                throw a;
            } catch (Throwable t) {
                if (!ops.isEmpty() && ops.get(ops.size() - 1).step == i) {
                    ops.get(ops.size() - 1).thrown = true;
                }
                violations.add(new Violation("exception-escaped:" + s.kind,
                        "step " + i + " " + s + " threw " + t));
            }
            boolean quiet = h.settle(this::fingerprint);
            oracle.checkBarrierWrittenAlone(i);
            countLedgerSwitch();
            String line = i + ": " + s + (op != null ? " #" + ops.indexOf(op) : "") + (quiet ? "" : " (not quiescent)");
            trace.add(verbose ? line + "   [" + report.state() + "]" : line);
        }
        return -1;
    }

    private Op issueStep(int i, ExplorerStep s) throws Throwable {
        switch (s.kind) {
            case PARK:
                parkNext = parkedAck != null && !parkedAck.parked();
                return null;
            case RELEASE_PARKED:
                releaseParked("at step " + i);
                return null;
            case CLOSE:
                releaseParked("before the close at step " + i);
                return interpreter.apply(i, s);
            case MARK_DELETE:
            case MARK_DELETE_PROPERTIES:
            case DELETE:
            case DELETE_LIST:
            case BATCH_ACK:
                if (parkNext) {
                    parkNext = false;
                    return parkedAck.issue(i, () -> interpreter.apply(i, s));
                }
                return interpreter.apply(i, s);
            default:
                return ExplorerFaults.isFault(s.kind) ? faults.apply(i, s) : interpreter.apply(i, s);
        }
    }

    private void releaseParked(String when) {
        if (parkedAck == null) {
            return;
        }
        try {
            if (!parkedAck.release(when)) {
                // The thread may wait for a write the schedule holds (under the queue monitor, which settling
                // takes): the holds go without settling, and a thread that still does not return ends the
                // schedule without its checks.
                faults.releaseHoldsWithoutSettling();
                if (!parkedAck.hungThreadReturned()) {
                    throw new Aborted();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
        h.settle(this::fingerprint);
    }

    /** A schedule that cannot go on: a thread of the cursor's still runs after everything was released. */
    static final class Aborted extends RuntimeException {
        Aborted() {
            super("a parked ack's thread did not return after every hold was released", null, false, false);
        }
    }

    // Adds already held stay held while the second factory recovers (nothing the old cursor does after the crash
    // can change what was recovered), and so does a parked ack.
    private Snapshot endWithCrash(int step) {
        crashTick = clock.get();
        if (plan.durable && ExplorerHarness.pastRecordCap(cursor) > 0) {
            count("check.pastRecordCapHeldAtCrash");
        }
        faults.atCrash();
        trace.add("stored at the crash: " + oracle.storedRecord());
        Snapshot snapshot = oracle.recover("recovered after a crash at step " + step);
        releaseParked("after the crash");
        faults.releaseEverything();
        // The crashed cursor still runs, as a broker that lost its topic to the one that recovered it: a flush
        // settles what its limiter holds, then it closes the topic once it learns so, which fails what its cursor
        // still holds (on our jars its writes fail on the version the recovery moved), so that every callback can
        // be checked.
        flushLive();
        closeLive();
        ExplorerOracle.closeQuietly(recoveredLedger);
        oracle.awaitOutcomes();
        return snapshot;
    }

    // Every hold released and a flush: then only acks held past the record's caps may still wait (the crash after
    // it would fail whatever else waits, and hide a write that was never going to come).
    private void drain(int step) {
        releaseParked("by the drain at step " + step);
        faults.releaseEverything();
        flushLive();
        countLedgerSwitch();
        oracle.checkDrained(step);
    }

    private void countLedgerSwitch() {
        if (plan.switchAfter == null) {
            return;
        }
        long id = ExplorerHarness.cursorLedgerId(cursor);
        if (id >= 0 && cursorLedgerId >= 0 && id != cursorLedgerId) {
            count("check.cursorLedgerSwitched");
        }
        if (id >= 0) {
            cursorLedgerId = id;
        }
    }

    private Snapshot endWithoutCrash() {
        releaseParked("at the end");
        faults.releaseEverything();
        flushLive();
        oracle.awaitOutcomes();
        oracle.checkHeldAcksDrained();
        Snapshot snapshot = plan.durable ? oracle.recover("recovered after the schedule") : oracle.liveSnapshot();
        ExplorerOracle.closeQuietly(recoveredLedger);
        return snapshot;
    }

    private void flushLive() {
        if (plan.durable && !closeIssued) {
            cursor.flush();
            h.settle(this::fingerprint);
        }
    }

    private void closeLive() {
        if (plan.durable && !closeIssued) {
            cursor.asyncClose(new AsyncCallbacks.CloseCallback() {
                @Override
                public void closeComplete(Object ctx) {
                }

                @Override
                public void closeFailed(ManagedLedgerException exception, Object ctx) {
                }
            }, null);
            h.settle(this::fingerprint);
        }
    }

    Op issue(int step, ExplorerStep s, String label) {
        Op op = new Op(step, s, label);
        ops.add(op);
        return op;
    }

    // ---- state ----

    int index(Position pos) {
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

    long fingerprint() {
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

    void count(String key) {
        coverage.merge(key, 1, Integer::sum);
    }
}
