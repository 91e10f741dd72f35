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

import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.mledger.PositionFactory;
import org.testng.annotations.Test;

/**
 * Seeded random schedules of MarkDeleteQueue driven as the cursor drives it: acks and resets
 * (barriers), reads held and released, writes completing in order or failing, the in-progress skip
 * (attach or defer), and crashes. Asserts the queue's invariants on each schedule; a failure names
 * its seed (rerun with -Dschedule.seed=SEED).
 */
public class MarkDeleteQueueScheduleTest {
    private static final int SCHEDULES = Integer.getInteger("schedule.count", 20_000);
    private static final int MAX_STEPS = 80;

    @Test(groups = FORK_ONLY, timeOut = 300_000)
    public void randomSchedulesKeepTheQueueInvariants() {
        long base = Long.getLong("schedule.seed", 26304L);
        long operations = 0;
        for (int i = 0; i < SCHEDULES; i++) {
            long seed = base + i;
            try {
                operations += new Schedule(seed).run();
            } catch (AssertionError | RuntimeException e) {
                throw new AssertionError("schedule with seed " + seed + " failed (rerun: -Dschedule.seed="
                        + seed + " -Dschedule.count=1): " + e.getMessage(), e);
            }
        }
        System.out.println("MarkDeleteQueue: explored " + SCHEDULES + " schedules (" + operations
                + " operations) from seed " + base);
    }

    /** An operation, as the cursor's MarkDeleteEntry: an ack or a reset (barrier). */
    private static final class Op {
        final int id;
        final boolean barrier;
        final long position;
        final long seq;
        List<Op> group;
        int fired;
        boolean succeeded;

        Op(int id, boolean barrier, long position, long seq) {
            this.id = id;
            this.barrier = barrier;
            this.position = position;
            this.seq = seq;
        }

        Position pos() {
            return PositionFactory.create(1, position);
        }
    }

    private static final class Write {
        final Op entry;
        final long coveredSeq;

        Write(Op entry, long coveredSeq) {
            this.entry = entry;
            this.coveredSeq = coveredSeq;
        }
    }

    private static final class Schedule {
        final Random random;
        final MarkDeleteQueue<Op> queue = new MarkDeleteQueue<>(new ArrayDeque<>(), op -> op.barrier);
        final List<Op> ops = new ArrayList<>();
        final ArrayDeque<Write> inFlight = new ArrayDeque<>();
        long markDelete = 10;
        long seq;
        int nextId;
        boolean readsPending;
        Op unfinishedBarrier;

        Schedule(long seed) {
            this.random = new Random(seed);
        }

        int run() {
            int steps = 1 + random.nextInt(MAX_STEPS);
            for (int s = 0; s < steps; s++) {
                step();
            }
            if (random.nextInt(4) == 0) {
                crash();
            } else {
                quiesce();
            }
            for (Op op : ops) {
                assertEquals(op.fired, 1, "operation " + op.id + (op.barrier ? " (reset)" : " (ack)")
                        + " fired " + op.fired + " times");
            }
            return ops.size();
        }

        void step() {
            switch (random.nextInt(7)) {
                case 0, 1, 2 -> ack();
                case 3 -> {
                    if (unfinishedBarrier == null) {
                        reset();
                    } else {
                        ack();
                    }
                }
                case 4 -> {
                    readsPending = !readsPending;
                    flushIfReadable();
                }
                default -> {
                    if (!inFlight.isEmpty()) {
                        complete(random.nextInt(8) == 0);
                    }
                }
            }
        }

        void ack() {
            markDelete += random.nextInt(3);
            Op op = new Op(nextId++, false, markDelete, ++seq);
            ops.add(op);
            queue.add(op);
            flushIfReadable();
        }

        void reset() {
            long target = Math.max(0, markDelete + random.nextInt(9) - 5);
            Op op = new Op(nextId++, true, target, ++seq);
            ops.add(op);
            unfinishedBarrier = op;
            queue.add(op);
            flushIfReadable();
        }

        void flushIfReadable() {
            if (!readsPending) {
                flush();
            }
        }

        // ManagedCursorImpl#internalFlushPendingMarkDeletes, #writeForAcks and #internalMarkDelete.
        void flush() {
            MarkDeleteQueue.Batch<Op> batch;
            while ((batch = queue.next(inFlight.size())) != null) {
                if (batch.barrier) {
                    assertEquals(batch.ops.size(), 1);
                    assertTrue(inFlight.isEmpty(), "a barrier is written only when no write is in flight");
                    issue(batch.last());
                    assertNull(queue.next(inFlight.size()), "nothing is written while a barrier is in flight");
                    return;
                }
                Op write = writeForAcks(batch.ops);
                for (Op member : members(write)) {
                    assertFalse(member.barrier);
                    assertTrue(unfinishedBarrier == null || member.id < unfinishedBarrier.id,
                            "ack " + member.id + " written before the barrier queued ahead of it completed");
                }
                Write newest = inFlight.peekLast();
                if (newest != null && newest.entry.position > write.position) {
                    // The cursor's in-progress guard: attach to a write holding it, or wait for the drain.
                    long latestSeq = members(write).stream().mapToLong(o -> o.seq).max().orElse(0);
                    if (!queue.attachToCoveringWrite(write, write.pos(), latestSeq)) {
                        queue.deferUntilWritesDrain(members(write));
                    }
                    continue;
                }
                issue(write);
            }
        }

        Op writeForAcks(List<Op> acks) {
            Op latest = null;
            for (Op ack : acks) {
                if (ack.position <= markDelete && (latest == null || ack.position >= latest.position)) {
                    latest = ack;
                }
            }
            Op write = latest != null ? latest : new Op(-1, false, markDelete, ++seq);
            if (acks.size() > 1 || write != acks.get(0)) {
                write.group = acks;
            }
            return write;
        }

        static List<Op> members(Op write) {
            return write.group != null ? write.group : Collections.singletonList(write);
        }

        void issue(Op write) {
            Write w = new Write(write, seq);
            inFlight.addLast(w);
            queue.writeStarted(write, write.pos(), w.coveredSeq);
        }

        // Completion, as in ManagedCursorImpl#completeMarkDeleteWrite: in append order, but now and then a
        // later ack write first (one that fell back to the metadata store delays the ones before it).
        void complete(boolean fail) {
            Write w = inFlight.size() > 1 && random.nextInt(6) == 0
                    ? removeAt(1 + random.nextInt(inFlight.size() - 1)) : inFlight.pollFirst();
            boolean barrier = w.entry.barrier;
            if (barrier && !fail) {
                markDelete = w.entry.position;
            }
            if (barrier) {
                fire(w.entry, w, !fail);
                unfinishedBarrier = null;
            }
            List<Runnable> after = new ArrayList<>();
            List<Op> attached = queue.writeFinished(w.entry, barrier, after);
            if (!barrier) {
                fire(w.entry, w, !fail);
            }
            for (Op op : attached) {
                fire(op, w, !fail);
            }
            after.forEach(Runnable::run);
            if (inFlight.isEmpty()) {
                flushIfReadable();
            }
        }

        Write removeAt(int index) {
            List<Write> writes = new ArrayList<>(inFlight);
            Write w = writes.remove(index);
            inFlight.clear();
            inFlight.addAll(writes);
            return w;
        }

        void fire(Op write, Write by, boolean success) {
            for (Op op : members(write)) {
                if (op.id < 0) {
                    continue;
                }
                op.fired++;
                op.succeeded = success;
                if (success && !op.barrier) {
                    assertTrue(op.seq <= by.coveredSeq, "ack " + op.id + " reported durable by a write issued"
                            + " before it was applied");
                }
            }
        }

        void quiesce() {
            readsPending = false;
            for (int i = 0; i < 10_000 && !(queue.isEmpty() && inFlight.isEmpty()); i++) {
                flush();
                if (!inFlight.isEmpty()) {
                    complete(random.nextInt(8) == 0);
                }
            }
            assertTrue(queue.isEmpty() && inFlight.isEmpty(), "the queue drains");
        }

        // A crash loses what was not written; close and failure paths drain the queue.
        void crash() {
            while (!inFlight.isEmpty()) {
                complete(true);
            }
            for (Op op : queue.drain()) {
                fire(op, null, false);
            }
        }
    }
}
