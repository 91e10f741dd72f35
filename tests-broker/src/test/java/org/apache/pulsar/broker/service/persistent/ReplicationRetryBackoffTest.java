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

import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.mockingDetails;
import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertNotNull;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.mledger.PositionFactory;
import org.mockito.invocation.Invocation;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/**
 * The resend delay after a refusal on its own, on every line: a manual scheduler (the test runs what is due) and
 * a manual clock.
 */
public class ReplicationRetryBackoffTest {
    private static final Position E2 = PositionFactory.create(12, 2);
    private static final Position E3 = PositionFactory.create(12, 3);
    private static final Position E4 = PositionFactory.create(12, 4);
    private static final Position E5 = PositionFactory.create(12, 5);
    private static final String TOO_LARGE = "org.apache.pulsar.client.api.PulsarClientException$NotAllowedException:"
            + " Message size is larger than max message size";

    /** A task scheduled with its delay; the test runs it, unless its timer was cancelled. */
    private record Scheduled(Runnable task, long delayMillis, CompletableFuture<Void> timer) {
    }

    private final List<Scheduled> scheduled = new ArrayList<>();
    private final AtomicLong now = new AtomicLong(1_000_000);
    private final AtomicBoolean running = new AtomicBoolean(true);
    // The entries that left the replicator's backlog (skipped by an operator).
    private final Set<Position> skipped = ConcurrentHashMap.newKeySet();
    // The backoff's logger: the test reads the calls (the same on every line, whatever logging backend it has).
    private ReplicationHoldLog log;
    private ReplicationRetryBackoff backoff;

    @BeforeMethod(alwaysRun = true)
    public void setUp() {
        scheduled.clear();
        now.set(1_000_000);
        running.set(true);
        skipped.clear();
        log = mock(ReplicationHoldLog.class);
        backoff = newBackoff();
    }

    private ReplicationRetryBackoff newBackoff() {
        return new ReplicationRetryBackoff(this::schedule, now::get, running::get, skipped::contains, log);
    }

    private CompletableFuture<Void> schedule(Runnable task, long delayMillis) {
        CompletableFuture<Void> timer = new CompletableFuture<>();
        scheduled.add(new Scheduled(task, delayMillis, timer));
        return timer;
    }

    /** A line of the hold log: the call ({@code held}, {@code stillHeld}, ...) and its arguments. */
    private record Line(String kind, List<Object> args) {
        ReplicationHoldLog.Hold hold() {
            return (ReplicationHoldLog.Hold) args.get(0);
        }
    }

    // The lines an operator sees at INFO: every call but the debug-level refusedAgain.
    private List<Line> lines() {
        List<Line> lines = new ArrayList<>();
        for (Invocation invocation : mockingDetails(log).getInvocations()) {
            String kind = invocation.getMethod().getName();
            if (!kind.equals("refusedAgain")) {
                lines.add(new Line(kind, Arrays.asList(invocation.getRawArguments())));
            }
        }
        return lines;
    }

    // Runs the task scheduled last (exactly one timer must be waiting) after its delay has passed.
    private long runDue() {
        scheduled.removeIf(s -> s.timer().isCancelled());
        assertEquals(scheduled.size(), 1, "one retry scheduled");
        Scheduled due = scheduled.remove(0);
        now.addAndGet(due.delayMillis());
        due.timer().complete(null);
        due.task().run();
        return due.delayMillis();
    }

    @Test(groups = FORK_ONLY)
    public void delaysDoubleFrom100MillisUpToOneMinute() {
        AtomicInteger resends = new AtomicInteger();
        List<Long> delays = new ArrayList<>();
        for (int i = 0; i < 13; i++) {
            long delay = backoff.onRefusal(E3, TOO_LARGE, resends::incrementAndGet);
            assertEquals(resends.get(), i, "no resend before its delay has passed");
            assertTrue(backoff.isRetryPending());
            assertEquals(runDue(), delay);
            assertEquals(resends.get(), i + 1);
            delays.add(delay);
        }
        assertEquals(delays, List.of(100L, 200L, 400L, 800L, 1_600L, 3_200L, 6_400L, 12_800L, 25_600L, 51_200L,
                60_000L, 60_000L, 60_000L));
        assertTrue(backoff.isHeld());
        assertEquals(backoff.getHeldPosition(), E3);
        assertEquals(backoff.getAttempts(), 13);
        assertEquals(backoff.getHeldSinceMillis(), 1_000_000L);
        assertEquals(backoff.getLastReason(), TOO_LARGE);
        assertEquals(backoff.heldStats(), Map.of("pulsar.replication.retry.heldSince.12:3", 1_000_000L,
                "pulsar.replication.retry.attempts.12:3", 13L));
        backoff.onSuccess(E3);
        assertTrue(backoff.heldStats().isEmpty());
    }

    @Test(groups = FORK_ONLY)
    public void refusalsWhileARetryIsScheduledJoinIt() {
        List<String> resends = new ArrayList<>();
        assertEquals(backoff.onRefusal(E3, TOO_LARGE, () -> resends.add("E3")), 100L);
        // The fence refuses the sends that were in flight behind E3: no timer of their own, no longer delay.
        assertEquals(backoff.onRefusal(E4, "Fenced behind a refused replicated message", () -> resends.add("E4")),
                -1L);
        assertEquals(backoff.onRefusal(E5, "Fenced behind a refused replicated message", () -> resends.add("E5")),
                -1L);
        assertEquals(scheduled.size(), 1);
        assertTrue(resends.isEmpty());
        runDue();
        assertEquals(resends, List.of("E3", "E4", "E5"));
        assertFalse(backoff.isRetryPending());
        assertEquals(backoff.getAttempts(), 1);
        assertEquals(backoff.getHeldPosition(), E3, "the first refused position is held, not the fenced ones");
        assertEquals(backoff.getNextDelayMillis(), 200L);
    }

    @Test(groups = FORK_ONLY)
    public void aRefusalBehindTheHeldPositionAfterItsRetryKeepsTheDelay() {
        List<String> resends = new ArrayList<>();
        assertEquals(backoff.onRefusal(E3, TOO_LARGE, () -> resends.add("E3")), 100L);
        runDue();
        // E4's refusal, in flight behind E3, arrives once E3's retry has run: it is no attempt at E3.
        assertEquals(backoff.onRefusal(E4, "Fenced behind a refused replicated message", () -> resends.add("E4")),
                100L);
        runDue();
        assertEquals(backoff.getAttempts(), 1);
        assertEquals(backoff.getNextDelayMillis(), 200L);
        assertEquals(backoff.onRefusal(E3, TOO_LARGE, () -> resends.add("E3")), 200L);
        assertEquals(backoff.getAttempts(), 2);
        assertEquals(resends, List.of("E3", "E4"));
    }

    @Test(groups = FORK_ONLY)
    public void theHeldMessageStoredResetsTheDelay() {
        for (int i = 0; i < 5; i++) {
            backoff.onRefusal(E3, TOO_LARGE, () -> { });
            runDue();
        }
        assertEquals(backoff.getNextDelayMillis(), 3_200L);
        // A receipt for a message sent before the refused one does not end the hold.
        backoff.onSuccess(E2);
        assertTrue(backoff.isHeld());
        assertEquals(backoff.getNextDelayMillis(), 3_200L);
        backoff.onSuccess(E3);
        assertFalse(backoff.isHeld());
        assertNull(backoff.getHeldPosition());
        assertEquals(backoff.getAttempts(), 0);
        assertEquals(backoff.getNextDelayMillis(), 100L);
        // A later refusal starts again at 100 ms.
        assertEquals(backoff.onRefusal(E4, TOO_LARGE, () -> { }), 100L);
        assertEquals(backoff.getHeldPosition(), E4);
        runDue();
        // A later message stored while the held one is still refused (a remote without the publish fence stores the
        // sends that were in flight behind it) does not end the hold.
        backoff.onSuccess(E5);
        assertTrue(backoff.isHeld());
        assertEquals(backoff.getNextDelayMillis(), 200L);
        // Once the held entry was skipped by an operator, a later message stored ends it.
        skipped.add(E4);
        backoff.onSuccess(E5);
        assertFalse(backoff.isHeld());
        assertEquals(backoff.getNextDelayMillis(), 100L);
    }

    @Test(groups = FORK_ONLY)
    public void aReleasedEntryResetsTheDelay() {
        backoff.onRefusal(E3, TOO_LARGE, () -> { });
        runDue();
        backoff.onRefusal(E3, TOO_LARGE, () -> { });
        runDue();
        // Another entry released: E3 stays held.
        backoff.released(E4, "held for an operator");
        assertTrue(backoff.isHeld());
        assertEquals(backoff.getNextDelayMillis(), 400L);
        backoff.released(E3, "the entry was skipped or expired on the source");
        assertFalse(backoff.isHeld());
        assertEquals(backoff.getNextDelayMillis(), 100L);
        assertEquals(backoff.onRefusal(E4, TOO_LARGE, () -> { }), 100L);
    }

    @Test(groups = FORK_ONLY)
    public void aRetryThatComesDueAfterTheReplicatorClosedDoesNothing() {
        AtomicInteger resends = new AtomicInteger();
        backoff.onRefusal(E3, TOO_LARGE, resends::incrementAndGet);
        backoff.onRefusal(E4, TOO_LARGE, resends::incrementAndGet);
        Scheduled waiting = scheduled.get(0);
        backoff.close();
        assertTrue(waiting.timer().isCancelled(), "close cancels the timer");
        // A timer that fires anyway (it was running when cancelled) does nothing.
        waiting.task().run();
        assertEquals(resends.get(), 0, "a closed replicator's pending retry must not start reads again");
        assertFalse(backoff.isRetryPending());
        // Nothing is scheduled after close.
        assertEquals(backoff.onRefusal(E3, TOO_LARGE, resends::incrementAndGet), -1L);
        assertEquals(scheduled, List.of(waiting));
        assertEquals(resends.get(), 0);
    }

    @Test(groups = FORK_ONLY)
    public void aRetryThatComesDueAfterTheReplicatorTerminatedDoesNothing() {
        AtomicInteger resends = new AtomicInteger();
        backoff.onRefusal(E3, TOO_LARGE, resends::incrementAndGet);
        // Terminating: the state check the replicator gives says no when the timer fires.
        running.set(false);
        runDue();
        assertEquals(resends.get(), 0);
        assertFalse(backoff.isRetryPending());
    }

    @Test(groups = FORK_ONLY)
    public void aSchedulerThatRefusesTheTaskLeavesNoRetryPending() {
        ReplicationRetryBackoff shuttingDown = new ReplicationRetryBackoff((task, delayMillis) -> {
            throw new RejectedExecutionException("shutting down");
        }, now::get, running::get, skipped::contains, log);
        assertEquals(shuttingDown.onRefusal(E3, TOO_LARGE, () -> { }), -1L);
        assertFalse(shuttingDown.isRetryPending());
    }

    @Test(groups = FORK_ONLY)
    public void releasingTheHeldEntryRunsItsWaitingRetryAtOnce() {
        AtomicInteger resends = new AtomicInteger();
        for (int i = 0; i < 4; i++) {
            backoff.onRefusal(E3, TOO_LARGE, resends::incrementAndGet);
            runDue();
        }
        assertEquals(backoff.onRefusal(E3, TOO_LARGE, resends::incrementAndGet), 1_600L);
        Scheduled waiting = scheduled.get(0);
        // The operator skips E3: the rewind past it need not wait 1.6 s more.
        skipped.add(E3);
        backoff.released(E3, "the entry was skipped or expired on the source");
        assertTrue(waiting.timer().isCancelled(), "the timer of the released entry's retry is cancelled");
        assertEquals(runDue(), 0L);
        assertEquals(resends.get(), 5);
        assertFalse(backoff.isHeld());
        assertFalse(backoff.isRetryPending());
        // The cancelled timer, had it fired anyway, finds nothing to run.
        waiting.task().run();
        assertEquals(resends.get(), 5);
    }

    @Test(groups = FORK_ONLY)
    public void aRefusalOfAnEntryAlreadyReleasedHoldsNothing() {
        AtomicInteger resends = new AtomicInteger();
        // E3's send was in flight when the operator skipped it; the remote's refusal arrives afterwards.
        skipped.add(E3);
        assertEquals(backoff.onRefusal(E3, TOO_LARGE, resends::incrementAndGet), 0L);
        assertFalse(backoff.isHeld());
        assertEquals(runDue(), 0L);
        assertEquals(resends.get(), 1);
        assertTrue(lines().isEmpty(), "nothing held, nothing logged: " + lines());
    }

    @Test(groups = FORK_ONLY)
    public void theHeldSnapshotExistsOnlyWhileHeldAndNotOnceClosedWhichCancelsTheTimer() {
        assertNull(backoff.getHeld(), "not held");
        backoff.onRefusal(E3, TOO_LARGE, () -> { });
        runDue();
        backoff.onRefusal(E3, TOO_LARGE, () -> { });
        now.addAndGet(90_000);
        ReplicationRetryBackoff.Held held = backoff.getHeld();
        assertEquals(held.getMillis(), 90_000L + ReplicationRetryBackoff.FIRST_DELAY_MILLIS);
        assertEquals(held.getAttempts(), 2);
        backoff.onSuccess(E3);
        assertNull(backoff.getHeld(), "resumed: E3 stored");

        backoff.onRefusal(E4, TOO_LARGE, () -> { });
        assertNotNull(backoff.getHeld(), "held again: E4 refused");
        Scheduled waiting = scheduled.get(scheduled.size() - 1);
        backoff.close();
        assertTrue(waiting.timer().isCancelled(), "close cancels the waiting retry's timer");
        assertNull(backoff.getHeld(), "a closed replicator reports nothing");
    }

    @Test(groups = FORK_ONLY)
    public void logsAreBoundedWhileHeldAndCarryNoStackTrace() {
        // Ten minutes held: a refusal per round, plus the fenced sends joining the first round.
        long start = now.get();
        backoff.onRefusal(E3, TOO_LARGE, () -> { });
        for (int i = 0; i < 50; i++) {
            backoff.onRefusal(PositionFactory.create(12, 4 + i), "Fenced behind a refused replicated message",
                    () -> { });
        }
        runDue();
        while (now.get() - start < 600_000) {
            backoff.onRefusal(E3, TOO_LARGE, () -> { });
            runDue();
        }
        long heldMillis = now.get() - start;
        backoff.onSuccess(E3);

        List<Line> lines = lines();
        long held = lines.stream().filter(l -> l.kind().equals("held")).count();
        long summaries = lines.stream().filter(l -> l.kind().equals("stillHeld")).count();
        long resumed = lines.stream().filter(l -> l.kind().equals("resumed")).count();
        assertEquals(held, 1L, "one WARN when the topic becomes held");
        assertTrue(summaries >= 1 && summaries <= heldMillis / ReplicationRetryBackoff.SUMMARY_INTERVAL_MILLIS,
                "at most one summary a minute: " + summaries + " in " + heldMillis + " ms");
        assertEquals(resumed, 1L, "one INFO when it resumes");
        assertEquals(lines.size(), held + summaries + resumed, "nothing else logged: " + lines);
        Line first = lines.get(0);
        assertTrue(first.kind().equals("held") && first.hold().held().equals(E3)
                && first.hold().reason().equals(TOO_LARGE), first.toString());
        Line summary = lines.get(1);
        assertTrue(summary.kind().equals("stillHeld") && summary.hold().held().equals(E3)
                && summary.hold().attempts() > 1 && summary.hold().refusals() >= 1, summary.toString());
    }
}
