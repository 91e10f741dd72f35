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

import java.util.concurrent.TimeUnit;

/**
 * An ack issued on a second thread that stops after the cursor applied it and before it reaches the pending
 * mark-delete queue ({@link MarkDeleteQueueStop}): two threads that apply acks in one order and queue them in the
 * other (the race of #26304), which steps run one at a time never produce.
 *
 * <p>Once released, the ack must reach the queue and return within {@link #HANG_MILLIS}: a thread that does not
 * (for instance one that spins under the monitor, waiting for a write the schedule holds) is a violation.
 */
final class ExplorerParkedAck {
    // Far above the milliseconds a released ack takes, so that a loaded machine does not make one hang.
    static final long HANG_MILLIS = 5_000;
    private static final long STOP_SECONDS = 10;

    /** What the parked thread runs: the interpreter's issue of one ack step. */
    interface Issue {
        ExplorerRun.Op issue() throws Exception;
    }

    private final ExplorerRun run;
    private final MarkDeleteQueueStop stop;
    private Thread thread;
    private Thread hung;
    private int step;
    private volatile Throwable thrown;

    ExplorerParkedAck(ExplorerRun run, ManagedCursorImpl cursor) {
        this.run = run;
        this.stop = MarkDeleteQueueStop.install(cursor);
    }

    boolean parked() {
        return thread != null;
    }

    /**
     * Issues the ack on a new thread and returns once it stopped, or finished without reaching the stop. Returns
     * the ack's operation; rethrows what its issue threw.
     */
    ExplorerRun.Op issue(int step, Issue issue) throws Throwable {
        ExplorerRun.Op[] op = new ExplorerRun.Op[1];
        thrown = null;
        Thread t = new Thread(() -> {
            try {
                op[0] = issue.issue();
            } catch (Throwable e) {
                thrown = e;
            } finally {
                stop.done();
            }
        }, "explorer-parked-ack");
        t.setDaemon(true);
        stop.arm(t);
        t.start();
        boolean stopped = stop.awaitStopped(t, STOP_SECONDS);
        if (!stopped) {
            t.join(TimeUnit.SECONDS.toMillis(STOP_SECONDS));
        }
        this.step = step;
        if (stopped || t.isAlive()) {
            // Stopped, or neither stopped nor finished in time: release() lets it go on, and reports it if it
            // never returns.
            thread = t;
            run.count(stopped ? "parkedAck.stopped" : "parkedAck.late");
        } else {
            run.count("parkedAck.finished");
        }
        if (stop.stoppedUnderLock()) {
            throw new IllegalStateException("the parked ack reached its stop under the cursor lock or the"
                    + " pendingMarkDeleteOps monitor: the stop cannot be used on this line");
        }
        if (thrown != null) {
            throw thrown;
        }
        return op[0];
    }

    /**
     * Lets the parked ack go on, and waits for its thread to return. Returns false, with a violation, when it has
     * not returned within {@link #HANG_MILLIS}; true otherwise, also when no ack is parked.
     */
    boolean release(String when) throws InterruptedException {
        if (thread == null) {
            return true;
        }
        Thread t = thread;
        thread = null;
        stop.release();
        t.join(HANG_MILLIS);
        if (thrown != null) {
            markThrown();
            run.violations.add(new ExplorerRun.Violation("exception-escaped:PARKED_ACK",
                    "the ack parked at step " + step + " threw " + thrown));
        }
        if (!t.isAlive()) {
            return true;
        }
        hung = t;
        run.violations.add(new ExplorerRun.Violation("parked-ack-hung", "the ack parked at step " + step
                + " was released " + when + " and its thread did not return in " + HANG_MILLIS + " ms:"
                + stack(t)));
        return false;
    }

    /** After a hang, once the schedule's holds are released: whether the thread returned within the bound. */
    boolean hungThreadReturned() throws InterruptedException {
        Thread t = hung;
        if (t == null) {
            return true;
        }
        t.join(HANG_MILLIS);
        return !t.isAlive();
    }

    // An exception after the stop: its callback may never fire, which the oracle must not count as a hang.
    private void markThrown() {
        for (ExplorerRun.Op o : run.ops) {
            if (o.step == step) {
                o.thrown = true;
            }
        }
    }

    private static String stack(Thread t) {
        StringBuilder b = new StringBuilder();
        for (StackTraceElement e : t.getStackTrace()) {
            b.append("\n    at ").append(e);
        }
        return b.toString();
    }
}
