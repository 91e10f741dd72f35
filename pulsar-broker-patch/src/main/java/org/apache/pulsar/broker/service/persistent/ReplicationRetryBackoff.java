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

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import java.util.function.Predicate;
import org.apache.bookkeeper.mledger.Position;

/**
 * The resend of a source entry the remote cluster refused (a topic-level maximum message size answered with
 * {@code NotAllowedError}, the remote's publish fence, a checksum refusal): one per replicator.
 *
 * <p>Upstream rewinds the replicator cursor at once after such a refusal, and the remote refuses the resend again
 * at once: thousands of rewinds a second, each with an ERROR line and its stack trace. Here the rewind (and so the
 * resend) that follows a refusal waits {@link #FIRST_DELAY_MILLIS} ms, twice as long after each next refusal, up to
 * {@link #MAX_DELAY_MILLIS} ms; the refused message stored (or its entry released) resets it. While a
 * retry is scheduled the replicator does not read (its rewind wait is open), so the read position does not move;
 * refusals that arrive meanwhile (the sends in flight behind the refused one) join the scheduled retry. While the
 * topic is held, the replicator sends one message at a time ({@link #isHeld()}), so that each round costs the
 * remote one refused send, not a read batch of them, and nothing after the refused message is sent before it is
 * stored.
 *
 * <p>Logs are bounded ({@link ReplicationHoldLog}): one WARN when the topic becomes held, at most one summary line per
 * {@link #SUMMARY_INTERVAL_MILLIS} ms while it stays held, one INFO when it resumes. Only refusals are handled
 * here; any other failed send (the remote topic moving, a reconnect, a timeout) is resent at once, as upstream.
 *
 * <p>While held, two gauges of the broker's replicator stats name the topic ({@link #getHeld()}); a topic that is
 * not held reports no point.
 *
 * <p>A retry that comes due after the replicator stopped ({@link #close()}, or the state check given to the
 * constructor says so) does nothing: it must not start reads again. {@link #close()} cancels it.
 */
public class ReplicationRetryBackoff {
    /** The delay before the first resend after a refusal. */
    public static final long FIRST_DELAY_MILLIS = 100;
    /** The longest delay between two resends of a refused message. */
    public static final long MAX_DELAY_MILLIS = TimeUnit.SECONDS.toMillis(60);
    /** At most one summary line per this interval while a topic stays held. */
    public static final long SUMMARY_INTERVAL_MILLIS = TimeUnit.SECONDS.toMillis(60);
    /** stats-internal property (on the replicator cursor) of the held position: since when, epoch ms. */
    public static final String HELD_SINCE_PREFIX = "pulsar.replication.retry.heldSince.";
    /** stats-internal property (on the replicator cursor) of the held position: the resends scheduled. */
    public static final String ATTEMPTS_PREFIX = "pulsar.replication.retry.attempts.";
    /** A reason is cut to this length. */
    static final int MAX_REASON_LENGTH = 256;

    /** Runs a task after a delay; in a broker, its scheduled executor. */
    public interface Scheduler {
        Future<?> schedule(Runnable task, long delayMillis);
    }

    private final Scheduler scheduler;
    private final LongSupplier clock;
    private final BooleanSupplier running;
    private final Predicate<Position> released;
    private final ReplicationHoldLog holdLog;

    // The first source position refused since the last successful send at or after it; null while not held.
    private volatile Position heldPosition;
    // Guarded by this.
    private long heldSinceMillis;
    private int attempts;
    private String lastReason;
    private long nextDelayMillis = FIRST_DELAY_MILLIS;
    // The delay of the last attempt at the held position: the refusals of the sends that were in flight behind it
    // arrive after its retry may have run, and their rewind keeps this rhythm instead of doubling it.
    private long lastDelayMillis = FIRST_DELAY_MILLIS;
    private long lastSummaryMillis;
    private int refusalsSinceSummary;
    private boolean closed;
    // The retries waiting for the scheduled one; null while none is scheduled. Written under this.
    private volatile List<Runnable> pending;
    // The timer of the scheduled retry. Guarded by this.
    private Future<?> pendingTimer;

    /**
     * @param running checked when a retry comes due: false once the replicator is terminating or terminated
     * @param released whether a source entry left the replicator's backlog (skipped, expired)
     */
    public ReplicationRetryBackoff(String replicatorId, String remoteCluster, ScheduledExecutorService executor,
                                   BooleanSupplier running, Predicate<Position> released) {
        this((task, delayMillis) -> executor.schedule(task, delayMillis, TimeUnit.MILLISECONDS),
                System::currentTimeMillis, running, released, new ReplicationHoldLogger(replicatorId, remoteCluster));
    }

    ReplicationRetryBackoff(Scheduler scheduler, LongSupplier clock, BooleanSupplier running,
                            Predicate<Position> released, ReplicationHoldLog holdLog) {
        this.scheduler = scheduler;
        this.clock = clock;
        this.running = running;
        this.released = released;
        this.holdLog = holdLog;
    }

    /** A snapshot of the held state: how long it has been held, and the resends scheduled since. */
    public static final class Held {
        private final long millis;
        private final int attempts;

        Held(long millis, int attempts) {
            this.millis = millis;
            this.attempts = attempts;
        }

        /** Since the remote first refused the held message, on the backoff's clock. */
        public long getMillis() {
            return millis;
        }

        public int getAttempts() {
            return attempts;
        }
    }

    /**
     * The held state in one snapshot, for the broker's held gauges (OpenTelemetryReplicatorStats); null while not
     * held, and once closed, so that a series exists only while its topic is held.
     */
    public synchronized Held getHeld() {
        return closed || heldPosition == null ? null : new Held(clock.getAsLong() - heldSinceMillis, attempts);
    }

    /**
     * The remote refused the send of {@code position}: {@code retry} (the rewind that resends it) runs after the
     * backoff delay, on the scheduler, unless the replicator stopped by then. A refusal that arrives while a retry
     * is scheduled joins it (same time, no longer delay).
     *
     * <p>The refusal of an entry that already left the backlog (an operator skipped it while its send was in
     * flight) holds nothing: its retry, the rewind past it, runs at once.
     *
     * @return the delay of the retry scheduled for this refusal, or -1 if it joined a scheduled one (or the
     *     replicator is closed, or the scheduler refused the task)
     */
    public long onRefusal(Position position, String reason, Runnable retry) {
        String why = bounded(reason == null || reason.isEmpty() ? "refused" : reason);
        long now = clock.getAsLong();
        if (released.test(position)) {
            return retryReleased(retry);
        }
        boolean becameHeld;
        boolean summary;
        ReplicationHoldLog.Hold hold;
        synchronized (this) {
            if (closed) {
                return -1;
            }
            becameHeld = hold(position, why, now);
            if (pending != null) {
                pending.add(retry);
                return -1;
            }
            long delay = nextDelay(position);
            pending = new ArrayList<>();
            pending.add(retry);
            // Under this monitor, so that a release in between finds the timer to cancel.
            if (!schedule(delay)) {
                return -1;
            }
            summary = !becameHeld && now - lastSummaryMillis >= SUMMARY_INTERVAL_MILLIS;
            hold = new ReplicationHoldLog.Hold(heldPosition, now - heldSinceMillis, attempts, refusalsSinceSummary,
                    delay, why);
            if (summary) {
                refusalsSinceSummary = 0;
                lastSummaryMillis = now;
            }
        }
        if (becameHeld) {
            holdLog.held(hold, MAX_DELAY_MILLIS);
        } else if (summary) {
            holdLog.stillHeld(hold, SUMMARY_INTERVAL_MILLIS);
        } else {
            holdLog.refusedAgain(hold);
        }
        return hold.delayMillis();
    }

    // Guarded by this. Records the refusal of position; true if it starts the hold.
    private boolean hold(Position position, String why, long now) {
        lastReason = why;
        refusalsSinceSummary++;
        if (heldPosition == null) {
            heldPosition = position;
            heldSinceMillis = now;
            lastSummaryMillis = now;
            refusalsSinceSummary = 1;
            return true;
        }
        if (position.compareTo(heldPosition) < 0) {
            heldPosition = position;
        }
        return false;
    }

    // Guarded by this. The delay of the retry a refusal schedules: a refusal of the held position is one more
    // attempt and doubles the next delay; the refusal of a send that was in flight behind it keeps the rhythm.
    private long nextDelay(Position position) {
        if (position.compareTo(heldPosition) > 0) {
            return lastDelayMillis;
        }
        attempts++;
        lastDelayMillis = nextDelayMillis;
        nextDelayMillis = Math.min(nextDelayMillis * 2, MAX_DELAY_MILLIS);
        return lastDelayMillis;
    }

    // Schedules the retries pending now: they run after delayMillis, unless released or closed before.
    private boolean schedule(long delayMillis) {
        synchronized (this) {
            List<Runnable> due = pending;
            if (due == null) {
                return false;
            }
            try {
                pendingTimer = scheduler.schedule(() -> retryDue(due), delayMillis);
                return true;
            } catch (RejectedExecutionException e) {
                // The broker's executor is shutting down: the replicator goes with it.
                pending = null;
                return false;
            }
        }
    }

    private long retryReleased(Runnable retry) {
        synchronized (this) {
            if (closed) {
                return -1;
            }
            if (pending != null) {
                pending.add(retry);
                return -1;
            }
            pending = new ArrayList<>();
            pending.add(retry);
            return schedule(0) ? 0 : -1;
        }
    }

    // Runs the retries of one timer; a timer whose retries were already run (released early) finds other ones, or
    // none, pending, and leaves them.
    private void retryDue(List<Runnable> due) {
        synchronized (this) {
            if (pending != due || closed) {
                return;
            }
            pending = null;
            pendingTimer = null;
        }
        if (!running.getAsBoolean()) {
            holdLog.droppedAfterStop();
            return;
        }
        for (Runnable retry : due) {
            try {
                retry.run();
            } catch (Throwable t) {
                holdLog.retryFailed(t);
            }
        }
    }

    /**
     * The remote stored the message at {@code position}. The held one ends the hold and resets the delay; so does
     * a later one once the held entry left the backlog (an operator skipped it). Any other (sent before the refused
     * message, or stored by a remote without the publish fence while the held one is still refused) does not.
     */
    public void onSuccess(Position position) {
        Position held = heldPosition;
        if (held == null || !endsHold(position, held)) {
            return;
        }
        long now = clock.getAsLong();
        int attemptsThen;
        long since;
        synchronized (this) {
            if (heldPosition != held) {
                return;
            }
            held = heldPosition;
            attemptsThen = attempts;
            since = heldSinceMillis;
            reset();
        }
        holdLog.resumed(position, held, now - since, attemptsThen);
    }

    /**
     * The entry at {@code position} is no longer to be sent (an operator skipped it, it expired, or it is held for
     * the operator after a duplicate receipt): if it is the held one, the delay is reset and the replicator no
     * longer sends one message at a time.
     */
    public void released(Position position, String why) {
        Position held;
        Future<?> timer;
        synchronized (this) {
            held = heldPosition;
            if (held == null || !held.equals(position)) {
                return;
            }
            reset();
            // The retry waiting for its delay rewinds past the released entry: it need not wait any longer.
            timer = pendingTimer;
        }
        holdLog.released(held, why);
        if (timer != null && timer.cancel(false)) {
            schedule(0);
        }
    }

    private boolean endsHold(Position stored, Position held) {
        int order = stored.compareTo(held);
        return order == 0 || (order > 0 && released.test(held));
    }

    private void reset() {
        heldPosition = null;
        heldSinceMillis = 0;
        attempts = 0;
        lastReason = null;
        nextDelayMillis = FIRST_DELAY_MILLIS;
        lastDelayMillis = FIRST_DELAY_MILLIS;
        refusalsSinceSummary = 0;
    }

    /** The replicator stopped: a retry that comes due later does nothing, and it records no gauge point. */
    public void close() {
        Future<?> timer;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            pending = null;
            timer = pendingTimer;
            pendingTimer = null;
        }
        if (timer != null) {
            timer.cancel(false);
        }
    }

    /** A refusal has not been followed by a stored message yet: the replicator sends one message at a time. */
    public boolean isHeld() {
        return heldPosition != null;
    }

    /** The first refused position not stored since, or null. */
    public Position getHeldPosition() {
        return heldPosition;
    }

    /** Since when (epoch ms) the topic is held, or 0. */
    public synchronized long getHeldSinceMillis() {
        return heldSinceMillis;
    }

    /** The retries scheduled since the topic became held (each after a refusal). */
    public synchronized int getAttempts() {
        return attempts;
    }

    public synchronized String getLastReason() {
        return lastReason;
    }

    /**
     * What stats-internal shows on the replicator cursor while held: {@link #HELD_SINCE_PREFIX} and
     * {@link #ATTEMPTS_PREFIX} followed by {@code <ledgerId>:<entryId>} of the held position; empty while not held.
     */
    public synchronized Map<String, Long> heldStats() {
        Position held = heldPosition;
        if (held == null) {
            return Map.of();
        }
        String at = held.getLedgerId() + ":" + held.getEntryId();
        return Map.of(HELD_SINCE_PREFIX + at, heldSinceMillis, ATTEMPTS_PREFIX + at, (long) attempts);
    }

    /** The delay the next refusal's retry will wait. */
    public synchronized long getNextDelayMillis() {
        return nextDelayMillis;
    }

    /** A retry is scheduled and not run yet: the replicator need not poll for reads, the retry reads. */
    public boolean isRetryPending() {
        return pending != null;
    }

    private static String bounded(String value) {
        return value.length() <= MAX_REASON_LENGTH ? value : value.substring(0, MAX_REASON_LENGTH);
    }
}
