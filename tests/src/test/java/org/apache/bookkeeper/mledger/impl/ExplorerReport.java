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

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Map;

/**
 * The report of one run: its trace (steps, each operation's outcome, the recovered state), the cursor's state
 * for a verbose trace, the probe's findings as violations, and the coverage counts of what the callbacks
 * reported.
 */
final class ExplorerReport {
    private final ExplorerRun run;

    ExplorerReport(ExplorerRun run) {
        this.run = run;
    }

    /** The steps with each operation's outcome; with {@code verbose}, the cursor's state after each step. */
    String trace() {
        StringBuilder sb = new StringBuilder();
        sb.append("seed ").append(run.plan.seed).append(" (").append(run.plan.durable ? "durable" : "non-durable")
                .append(" cursor, ").append(run.plan.profile == ExplorerStep.Profile.STANDARD ? ""
                        : run.plan.profile.label + " mix, ")
                .append(run.plan.cap == null ? "" : "record caps " + run.plan.cap + ", ")
                .append(run.plan.switchAfter == null ? ""
                        : "cursor ledger rolled over past " + run.plan.switchAfter + " records, ")
                .append("entries p0..p").append(run.plan.entries - 1).append(")\n");
        for (String line : run.trace) {
            sb.append("  ").append(line).append('\n');
        }
        return sb.toString();
    }

    /** Adds each operation's outcome to the trace. */
    void outcomes() {
        for (int k = 0; k < run.ops.size(); k++) {
            ExplorerRun.Op op = run.ops.get(k);
            run.trace.add("#" + k + " step " + op.step + " " + op.label + ":" + op.status());
        }
    }

    /** Adds the state the contract is checked against to the trace. */
    void snapshot(ExplorerRun.Snapshot s) {
        run.trace.add(s.source + ": markDelete=" + pos(s.markDelete) + " deleted=" + deletedList(s) + batchList(s));
    }

    /** The probe's findings (a callback under a lock, fired twice, misordered signals) as violations. */
    void probeViolations() {
        for (String v : run.probe.violations) {
            String where = "";
            for (Map.Entry<String, String> e : run.lockSites.entrySet()) {
                if (v.startsWith(e.getKey() + " ")) {
                    where = ", called from " + e.getValue();
                }
            }
            run.violations.add(new ExplorerRun.Violation(probeKind(v), v + where));
        }
    }

    void countSignals() {
        for (ExplorerRun.Op op : run.ops) {
            if (op.outcome.accepted.isDone()) {
                run.count("signal.accepted");
            }
            if (op.s.kind == ExplorerStep.Kind.RESET && op.fireTick != 0) {
                run.count(op.failed ? "reset.failed" : "reset.complete");
            }
        }
    }

    // The managed-ledger frames that called back (the first three outside this explorer).
    static String site() {
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

    static String pos(int index) {
        return index < 0 ? "before-p0" : "p" + index;
    }

    String deletedList(ExplorerRun.Snapshot s) {
        List<String> d = new ArrayList<>();
        for (int k = s.markDelete + 1; k < run.plan.entries; k++) {
            if (s.deleted[k]) {
                d.add("p" + k);
            }
        }
        return d.toString();
    }

    private String batchList(ExplorerRun.Snapshot s) {
        StringBuilder sb = new StringBuilder();
        for (int k = 0; k < run.plan.entries; k++) {
            if (s.batch[k] != null) {
                sb.append(" batch(p").append(k).append(")unacked=").append(BitSet.valueOf(s.batch[k]));
            }
        }
        return sb.toString();
    }

    /** The live cursor's state, for a verbose trace. */
    String state() {
        ManagedCursorImpl cursor = run.cursor;
        int held = ExplorerHarness.acceptedNotDurable(cursor);
        return "md=" + pos(run.index(cursor.getMarkDeletedPosition())) + " rp=p"
                + cursor.getReadPosition().getEntryId() + " queued=" + ExplorerHarness.queued(cursor)
                + " inFlight=" + ExplorerHarness.writesInFlight(cursor) + " reads="
                + ExplorerHarness.pendingReadOps(cursor) + " heldAdds=" + run.h.heldAdds()
                + (held >= 0 ? " held=" + held : "") + " dirty=" + ExplorerHarness.dirty(cursor) + " state="
                + cursor.getState() + " fired=" + firedList();
    }

    private String firedList() {
        StringBuilder sb = new StringBuilder();
        for (int k = 0; k < run.ops.size(); k++) {
            ExplorerRun.Op op = run.ops.get(k);
            sb.append(k == 0 ? "" : ",").append('#').append(k)
                    .append(op.fireTick == 0 ? (op.outcome.accepted.isDone() ? "a" : "-") : op.failed ? "F" : "ok");
        }
        return sb.toString();
    }
}
