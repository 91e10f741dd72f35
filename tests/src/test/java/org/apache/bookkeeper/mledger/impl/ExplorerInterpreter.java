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
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.bookkeeper.mledger.AsyncCallbacks;
import org.apache.bookkeeper.mledger.ManagedCursor;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.Position;

/**
 * The step interpreter: issues a step's operation on the cursor and records, when it is issued, what the oracle
 * needs to judge it (the entries it must delete, whether it changes nothing, its issue tick). The environment's
 * steps (holds and faults) are {@link ExplorerFaults}'.
 */
final class ExplorerInterpreter {
    private static final double NO_PERMIT_RATE = 0.001;

    private final ExplorerRun run;

    ExplorerInterpreter(ExplorerRun run) {
        this.run = run;
    }

    /** Issues the step; returns its operation, or null for a step without a callback. */
    ExplorerRun.Op apply(int step, ExplorerStep s) throws Exception {
        switch (s.kind) {
            case MARK_DELETE:
            case MARK_DELETE_PROPERTIES:
                return markDelete(step, s);
            case DELETE:
            case DELETE_LIST:
                return delete(step, s);
            case BATCH_ACK:
                return batchAck(step, s);
            case RESET:
                return reset(step, s);
            case SKIP:
                return skip(step, s);
            case CLEAR_BACKLOG:
                return clearBacklog(step, s);
            case PUT_PROPERTY:
                return putProperty(step, s);
            case CLOSE:
                return close(step, s);
            case FLUSH:
                run.cursor.flush();
                return null;
            case THROTTLE:
                run.cursor.setThrottleMarkDelete(NO_PERMIT_RATE);
                return null;
            default:
                throw new IllegalStateException(s.kind.name());
        }
    }

    private ExplorerRun.Op markDelete(int step, ExplorerStep s) {
        boolean withProperties = s.kind == ExplorerStep.Kind.MARK_DELETE_PROPERTIES;
        ExplorerRun.Op op = run.issue(step, s, withProperties
                ? "markDelete(p" + s.a + ", {md=" + s.a + ", step=" + step + "})" : s.toString());
        op.upTo = s.a;
        int markDeleteIndex = run.index(run.cursor.getMarkDeletedPosition());
        op.redundant = markDeleteIndex >= s.a;
        op.behindMarkDelete = markDeleteIndex > s.a;
        op.required.add(s.a);
        op.issueTick = run.clock.incrementAndGet();
        if (withProperties) {
            op.markDeleteProperties = Map.of("md", (long) s.a, "step", (long) step);
            if (markDeleteIndex == s.a) {
                run.count("schedule.markDeletePropertiesAtTheMarkDeletePosition");
            }
            run.cursor.asyncMarkDelete(run.p.get(s.a), op.markDeleteProperties, markDeleteCallback(op), null);
        } else {
            run.cursor.asyncMarkDelete(run.p.get(s.a), markDeleteCallback(op), null);
        }
        return op;
    }

    private ExplorerRun.Op delete(int step, ExplorerStep s) {
        ExplorerRun.Op op = run.issue(step, s, s.toString());
        Set<Integer> idx = new LinkedHashSet<>();
        idx.add(s.a);
        if (s.more != null) {
            for (int m : s.more) {
                idx.add(m);
            }
        }
        List<Position> positions = new ArrayList<>();
        for (int k : idx) {
            positions.add(run.p.get(k));
            op.named.add(k);
            if (!run.cursor.isMessageDeleted(run.p.get(k))) {
                op.required.add(k);
            }
        }
        op.redundant = op.required.isEmpty();
        op.issueTick = run.clock.incrementAndGet();
        if (s.kind == ExplorerStep.Kind.DELETE) {
            run.cursor.asyncDelete(positions.get(0), deleteCallback(op), null);
        } else {
            run.cursor.asyncDelete(positions, deleteCallback(op), null);
        }
        return op;
    }

    private ExplorerRun.Op batchAck(int step, ExplorerStep s) {
        ExplorerRun.Op op = run.issue(step, s, s.toString());
        op.named.add(s.a);
        op.required.add(s.a);
        long[] current = run.cursor.getDeletedBatchIndexesAsLongArray(run.p.get(s.a));
        op.redundant = run.cursor.isMessageDeleted(run.p.get(s.a))
                || (current != null && ExplorerOracle.subset(current, s.remaining));
        Position withAckSet = AckSetStateUtil.createPositionWithAckSet(run.ledgerId, s.a,
                new long[] {s.remaining});
        op.issueTick = run.clock.incrementAndGet();
        run.cursor.asyncDelete(withAckSet, deleteCallback(op), null);
        return op;
    }

    private ExplorerRun.Op reset(int step, ExplorerStep s) {
        ExplorerRun.Op op = run.issue(step, s, s.toString());
        op.issueTick = run.clock.incrementAndGet();
        run.cursor.asyncResetCursor(run.p.get(s.a), false, new AsyncCallbacks.ResetCursorCallback() {
            @Override
            public void resetComplete(Object ctx) {
                op.fire(null);
            }

            @Override
            public void resetFailed(ManagedLedgerException exception, Object ctx) {
                op.fire(exception);
            }
        });
        return op;
    }

    private ExplorerRun.Op skip(int step, ExplorerStep s) {
        ExplorerRun.Op op = run.issue(step, s, s.toString());
        int before = run.index(run.cursor.getMarkDeletedPosition());
        op.issueTick = run.clock.incrementAndGet();
        run.cursor.asyncSkipEntries(s.a, ManagedCursor.IndividualDeletedEntries.Exclude,
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
        op.upTo = run.index(run.cursor.getMarkDeletedPosition());
        op.redundant = op.upTo <= before;
        return op;
    }

    private ExplorerRun.Op clearBacklog(int step, ExplorerStep s) {
        ExplorerRun.Op op = run.issue(step, s, s.toString());
        int before = run.index(run.cursor.getMarkDeletedPosition());
        op.issueTick = run.clock.incrementAndGet();
        run.cursor.asyncClearBacklog(new AsyncCallbacks.ClearBacklogCallback() {
            @Override
            public void clearBacklogComplete(Object ctx) {
                op.fire(null);
            }

            @Override
            public void clearBacklogFailed(ManagedLedgerException exception, Object ctx) {
                op.fire(exception);
            }
        }, null);
        op.upTo = run.index(run.cursor.getMarkDeletedPosition());
        op.redundant = op.upTo <= before;
        return op;
    }

    private ExplorerRun.Op putProperty(int step, ExplorerStep s) {
        ExplorerRun.Op op = run.issue(step, s, "putCursorProperty(k" + step + ", v" + step + ")");
        op.key = "k" + step;
        op.issueTick = run.clock.incrementAndGet();
        run.cursor.putCursorProperty(op.key, "v" + step).whenComplete((v, t) -> op.fire(t));
        return op;
    }

    private ExplorerRun.Op close(int step, ExplorerStep s) {
        ExplorerRun.Op op = run.issue(step, s, s.toString());
        run.closeIssued = true;
        op.issueTick = run.clock.incrementAndGet();
        run.cursor.asyncClose(new AsyncCallbacks.CloseCallback() {
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

    private static AsyncCallbacks.MarkDeleteCallback markDeleteCallback(ExplorerRun.Op op) {
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

    private static AsyncCallbacks.DeleteCallback deleteCallback(ExplorerRun.Op op) {
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
}
