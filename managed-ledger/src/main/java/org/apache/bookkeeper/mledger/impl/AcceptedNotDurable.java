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
import java.util.Collections;
import java.util.List;
import java.util.function.Predicate;
import org.apache.bookkeeper.mledger.Position;

/**
 * Acks applied in memory whose durable completion waits for a cursor-ledger write that contains them:
 * acks the mark-delete rate limiter kept from being written (#26484), reported "accepted", and acks a
 * write completed without containing them. Upstream reported throttled acks complete at once.
 *
 * <p>A write holds an ack when it was issued after the ack was applied (its covered sequence number is
 * at least the ack's) and the state it serialized contains the ack ({@link AppliedAck#heldBy}). A
 * reset's state change supersedes every ack applied before it: "reset wins", the ack is ordered before
 * the reset.
 *
 * <p>Not thread-safe: the cursor guards it with the {@code pendingMarkDeleteOps} monitor, except
 * {@link #mayHoldAny}.
 */
final class AcceptedNotDurable<T> {

    private static final class Held<T> {
        final T op;
        final long seq;
        final AppliedAck ack;

        Held(T op, long seq, AppliedAck ack) {
            this.op = op;
            this.seq = seq;
            this.ack = ack;
        }
    }

    private List<Held<T>> held = new ArrayList<>();
    // The size of held, for a completing write that does not take the monitor when nothing is held.
    private volatile int count;

    void add(T op, long seq, AppliedAck ack) {
        held.add(new Held<>(op, seq, ack));
        count = held.size();
    }

    /**
     * Whether an ack may be held, without the monitor. An ack added after this read returned false is
     * settled as if this read had come before its add under the monitor: its adder schedules the write
     * that holds it.
     */
    boolean mayHoldAny() {
        return count > 0;
    }

    boolean isEmpty() {
        return held.isEmpty();
    }

    int size() {
        return held.size();
    }

    /**
     * Removes and returns the acks that a durable write of {@code written}, covering sequence numbers up
     * to {@code coveredSeq}, contains, given the mark-delete position {@code markDeleteAfter} when it
     * completed. One pass: the list can hold many acks and this runs under the cursor's queue monitor.
     */
    List<T> heldBy(Position written, long coveredSeq, Position markDeleteAfter) {
        return removeIf(h -> h.seq <= coveredSeq && h.ack.heldBy(written, markDeleteAfter));
    }

    /** Removes and returns the acks applied before the reset whose state change began {@code generation}. */
    List<T> supersededBy(long generation) {
        return removeIf(h -> h.ack.resetGeneration < generation);
    }

    /** Removes and returns every held ack (close). */
    List<T> drain() {
        return removeIf(h -> true);
    }

    private List<T> removeIf(Predicate<Held<T>> settled) {
        if (held.isEmpty()) {
            return Collections.emptyList();
        }
        List<T> removed = new ArrayList<>();
        List<Held<T>> kept = new ArrayList<>(held.size());
        for (Held<T> h : held) {
            if (settled.test(h)) {
                removed.add(h.op);
            } else {
                kept.add(h);
            }
        }
        if (!removed.isEmpty()) {
            held = kept;
            count = kept.size();
        }
        return removed;
    }
}
