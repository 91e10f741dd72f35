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

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;
import java.util.function.Predicate;
import org.apache.bookkeeper.mledger.Position;

/**
 * The pending mark-delete operations of one durable cursor, as an ordered list of typed operations.
 *
 * <p>An operation is either an <em>ack</em> (a mark-delete or an individual delete, whose in-memory
 * effect is already applied when it is queued) or a <em>barrier</em> (a cursor reset, whose state
 * change is deferred until its own write is durable). The rules:
 * <ul>
 *   <li>a run of acks is flushed as one write; flushing never coalesces across a barrier;</li>
 *   <li>a barrier is written alone, only when no other write is in flight, and nothing queued after
 *       it is written before it completes;</li>
 *   <li>an ack whose state an in-flight write already holds completes with that write
 *       ({@link #attachToCoveringWrite}); one that it does not hold waits for the in-flight writes
 *       to drain ({@link #deferUntilWritesDrain}) instead of completing unwritten.</li>
 * </ul>
 *
 * <p>Every method but {@link #ackWriteFinished} and {@link #mayHaveQueued} is called with the monitor
 * of the queue's deque held, the cursor's {@code pendingMarkDeleteOps}, which stays the storage so
 * that code and tests reading that field see the queued operations. The writes in flight have a
 * monitor of their own as well: an ack write completes without the queue monitor, which the
 * submitting thread holds across its cursor-ledger add. No method runs a callback.
 *
 * @param <T> the operation type (the cursor's {@code MarkDeleteEntry})
 */
final class MarkDeleteQueue<T> {

    /** One write to hand to the cursor ledger: a run of acks, or one barrier. */
    static final class Batch<T> {
        final List<T> ops;
        final boolean barrier;

        Batch(List<T> ops, boolean barrier) {
            this.ops = ops;
            this.barrier = barrier;
        }

        T last() {
            return ops.get(ops.size() - 1);
        }
    }

    /** A write that was issued and has not completed, with what it holds. */
    private static final class InFlightWrite<T> {
        final T write;
        final Position position;
        final long coveredSeq;
        List<T> waiters;

        InFlightWrite(T write, Position position, long coveredSeq) {
            this.write = write;
            this.position = position;
            this.coveredSeq = coveredSeq;
        }
    }

    private final Deque<T> ops;
    private final Predicate<T> isBarrier;
    // Guarded by its own monitor too (see the class comment).
    private final Deque<InFlightWrite<T>> inFlight = new ArrayDeque<>();
    private final List<Runnable> afterBarrier = new ArrayList<>();
    private boolean barrierInFlight;
    private boolean headWaitsForWrites;
    // Barriers in ops: with none, a run of acks is the whole queue, taken in one step (the hot case).
    private int barriersQueued;
    // Whether ops is non-empty, for mayHaveQueued: written only when that changes (one fence per run of
    // queued acks, not one per ack).
    private volatile boolean queued;

    MarkDeleteQueue(Deque<T> ops, Predicate<T> isBarrier) {
        this.ops = ops;
        this.isBarrier = isBarrier;
    }

    void add(T op) {
        if (isBarrier.test(op)) {
            barriersQueued++;
        }
        ops.addLast(op);
        updateQueued();
    }

    boolean isEmpty() {
        return ops.isEmpty();
    }

    /**
     * Whether an operation may be queued, without the monitor: a completing write that finds none need not
     * take the monitor to flush. Whoever queues an operation that waits for the writes in flight to drain
     * reads their count after queueing it (in {@link #next}), and the completion reads this after lowering
     * that count: one of the two sees the other, so the operation is written by one of them. The flag is
     * written under the monitor whenever the queue's emptiness changes, so it has been true since the
     * first operation still queued was added, before that count was read.
     */
    boolean mayHaveQueued() {
        return queued;
    }

    private void updateQueued() {
        boolean nonEmpty = !ops.isEmpty();
        if (queued != nonEmpty) {
            queued = nonEmpty;
        }
    }

    boolean isBarrierInFlight() {
        return barrierInFlight;
    }

    /**
     * The next write, removed from the queue, or {@code null} when the head has to wait: for the
     * barrier in flight to complete, or, for a barrier or a deferred ack, for the writes in flight to
     * drain. Acks are taken up to the next barrier.
     */
    Batch<T> next(int writesInFlight) {
        if (barrierInFlight || ops.isEmpty()) {
            return null;
        }
        T head = ops.peekFirst();
        if (isBarrier.test(head)) {
            if (writesInFlight > 0) {
                return null;
            }
            ops.pollFirst();
            updateQueued();
            barriersQueued--;
            barrierInFlight = true;
            headWaitsForWrites = false;
            return new Batch<>(Collections.singletonList(head), true);
        }
        if (headWaitsForWrites && writesInFlight > 0) {
            return null;
        }
        headWaitsForWrites = false;
        if (barriersQueued == 0) {
            List<T> all;
            if (ops.size() == 1) {
                // One ack is the common case (nothing queued behind a read): no copy of the deque for it.
                all = Collections.singletonList(ops.pollFirst());
            } else {
                all = new ArrayList<>(ops);
                ops.clear();
            }
            updateQueued();
            return new Batch<>(all, false);
        }
        List<T> run = new ArrayList<>();
        while (!ops.isEmpty() && !isBarrier.test(ops.peekFirst())) {
            run.add(ops.pollFirst());
        }
        updateQueued();
        return new Batch<>(run, false);
    }

    /**
     * Whether an ack arriving at an empty queue with no barrier in flight may be written alone at once, as
     * {@link #next} would return it once queued, without passing through the deque (the common case with no
     * read in flight, where queueing it cost two writes of {@link #mayHaveQueued}'s flag, and a batch object).
     * False when it has to be queued.
     */
    boolean canTakeAlone(T op) {
        return ops.isEmpty() && !barrierInFlight && !isBarrier.test(op);
    }

    /**
     * Puts acks back at the head, in their order, to be written once the writes now in flight have
     * completed. A group is put back as its members, so that a later batch regroups them all.
     */
    void deferUntilWritesDrain(List<T> acks) {
        for (int i = acks.size() - 1; i >= 0; i--) {
            ops.addFirst(acks.get(i));
        }
        updateQueued();
        headWaitsForWrites = true;
    }

    /** Records an issued write and the operations whose state it holds (sequence numbers up to coveredSeq). */
    void writeStarted(T write, Position position, long coveredSeq) {
        writeStarted(write, position, coveredSeq, Collections.emptyList());
    }

    /** As {@link #writeStarted(Object, Position, long)}, with operations that complete with this write. */
    void writeStarted(T write, Position position, long coveredSeq, List<T> waiters) {
        InFlightWrite<T> w = new InFlightWrite<>(write, position, coveredSeq);
        if (!waiters.isEmpty()) {
            w.waiters = new ArrayList<>(waiters);
        }
        synchronized (inFlight) {
            inFlight.addLast(w);
        }
    }

    /**
     * Attaches {@code op} to an in-flight write that holds its state, if there is one: a write of a
     * position at or after the operation's, issued after the operation was applied.
     */
    boolean attachToCoveringWrite(T op, Position position, long seq) {
        synchronized (inFlight) {
            Iterator<InFlightWrite<T>> it = inFlight.descendingIterator();
            while (it.hasNext()) {
                InFlightWrite<T> w = it.next();
                if (w.coveredSeq >= seq && w.position.compareTo(position) >= 0) {
                    if (w.waiters == null) {
                        w.waiters = new ArrayList<>();
                    }
                    w.waiters.add(op);
                    return true;
                }
            }
            return false;
        }
    }

    /** Whether a write issued after the operation with sequence number {@code seq} was applied is in flight. */
    boolean writeInFlightCovering(long seq) {
        synchronized (inFlight) {
            for (InFlightWrite<T> w : inFlight) {
                if (w.coveredSeq >= seq) {
                    return true;
                }
            }
            return false;
        }
    }

    /**
     * Forgets a completed ack write (durable or failed) and returns the operations attached to it, whose
     * outcome is the write's. Called without the queue monitor: leaving the writes in flight is all an ack
     * write changes here, so a thread holding the queue monitor can find the write in flight for one
     * operation and gone for the next (attached to it, then deferred). Both are safe: draining is decided
     * by the writes' count in flight, which still includes this write, so nothing that waits for the
     * writes to drain (a barrier above all) starts before its completion has lowered that count.
     */
    List<T> ackWriteFinished(T write) {
        synchronized (inFlight) {
            InFlightWrite<T> oldest = inFlight.peekFirst();
            if (oldest != null && oldest.write == write) {
                // Writes mostly complete in the order they were issued.
                inFlight.pollFirst();
                return oldest.waiters != null ? oldest.waiters : Collections.emptyList();
            }
            for (Iterator<InFlightWrite<T>> it = inFlight.iterator(); it.hasNext(); ) {
                InFlightWrite<T> w = it.next();
                if (w.write == write) {
                    it.remove();
                    return w.waiters != null ? w.waiters : Collections.emptyList();
                }
            }
        }
        return Collections.emptyList();
    }

    /**
     * Forgets a completed write (durable or failed) and returns the operations attached to it, whose
     * outcome is the write's. When the write was the barrier's, releases what waited for it.
     */
    List<T> writeFinished(T write, boolean wasBarrier, List<Runnable> afterBarrierOut) {
        List<T> waiters = ackWriteFinished(write);
        if (wasBarrier && barrierInFlight) {
            barrierInFlight = false;
            afterBarrierOut.addAll(afterBarrier);
            afterBarrier.clear();
        }
        return waiters;
    }

    /** Runs {@code action} (outside the monitor, by the caller) once the barrier in flight completes. */
    void runAfterBarrier(Runnable action) {
        afterBarrier.add(action);
    }

    /** Removes and returns every queued operation, in order (close, unrecoverable failure). */
    List<T> drain() {
        List<T> all = new ArrayList<>(ops);
        ops.clear();
        updateQueued();
        headWaitsForWrites = false;
        barriersQueued = 0;
        return all;
    }
}
