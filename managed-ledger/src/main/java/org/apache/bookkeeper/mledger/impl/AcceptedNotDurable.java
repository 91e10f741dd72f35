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
import java.util.Map;
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
        // A durable record left it out only for its caps: it waits for a record that is not cut below it
        // (the holes below it close), not for a write of its own, which would be cut the same way.
        boolean pastCap;

        Held(T op, long seq, AppliedAck ack, boolean pastCap) {
            this.op = op;
            this.seq = seq;
            this.ack = ack;
            this.pastCap = pastCap;
        }
    }

    private List<Held<T>> held = new ArrayList<>();
    // The size of held, for a completing write that does not take the monitor when nothing is held.
    private volatile int count;
    // Kept so that a write asks whether a held ack needs it in O(1): most held acks wait for a write.
    private int pastCapCount;

    void add(T op, long seq, AppliedAck ack) {
        add(op, seq, ack, false);
    }

    void add(T op, long seq, AppliedAck ack, boolean pastCap) {
        held.add(new Held<>(op, seq, ack, pastCap));
        count = held.size();
        if (pastCap) {
            pastCapCount++;
        }
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

    /** How many held acks wait only for a record that the caps do not cut below them. */
    int pastCapCount() {
        return pastCapCount;
    }

    /** Whether a write of the current state would hold a held ack: one is not past the caps. */
    boolean waitsForWrite() {
        return held.size() > pastCapCount;
    }

    /**
     * Removes and returns the acks that a durable record contains: written at mark-delete position
     * {@code written} with {@code writtenProperties} as of sequence number {@code propertiesSeq}, covering
     * sequence numbers up to {@code coveredSeq}, given the mark-delete position {@code markDeleteAfter} when it
     * completed, and cut at the caps above
     * {@code heldUpTo} (null: not cut). An ack the record left out only for the caps is marked past them; one
     * it holds is no longer. Linear in the held acks, allocating only for those it removes: it runs under the
     * cursor's queue monitor.
     */
    List<T> heldBy(Position written, Map<String, Long> writtenProperties, long propertiesSeq, long coveredSeq,
                   Position markDeleteAfter, Position heldUpTo) {
        if (heldUpTo != null) {
            for (Held<T> h : held) {
                if (h.seq <= coveredSeq && !h.pastCap && h.ack.pastCapOf(written, markDeleteAfter, heldUpTo)) {
                    h.pastCap = true;
                    pastCapCount++;
                }
            }
        }
        return removeIf(h -> h.seq <= coveredSeq
                && h.ack.heldBy(written, writtenProperties, propertiesSeq, h.seq, markDeleteAfter, heldUpTo));
    }

    /** Removes and returns the acks applied before the reset whose state change began {@code generation}. */
    List<T> supersededBy(long generation) {
        return removeIf(h -> h.ack.resetGeneration < generation);
    }

    /**
     * Removes and returns the acks past the caps beyond the {@code limit} oldest of them. Such an ack waits
     * for holes below it to close, which may never happen (a consumer that never acks them): the bound keeps
     * the list, and the pass each durable write makes over it, finite.
     */
    List<T> takePastCapBeyond(int limit) {
        if (pastCapCount <= limit) {
            return Collections.emptyList();
        }
        List<T> taken = new ArrayList<>();
        for (int i = held.size() - 1; i >= 0 && pastCapCount > limit; i--) {
            Held<T> h = held.get(i);
            if (h.pastCap) {
                taken.add(h.op);
                held.remove(i);
                pastCapCount--;
            }
        }
        count = held.size();
        Collections.reverse(taken);
        return taken;
    }

    /** Removes and returns every held ack (close). */
    List<T> drain() {
        return removeIf(h -> true);
    }

    private boolean anyMatches(Predicate<Held<T>> settled) {
        for (Held<T> h : held) {
            if (settled.test(h)) {
                return true;
            }
        }
        return false;
    }

    private List<T> removeIf(Predicate<Held<T>> settled) {
        if (held.isEmpty() || !anyMatches(settled)) {
            // The common pass over acks that stay held allocates nothing.
            return Collections.emptyList();
        }
        List<T> removed = new ArrayList<>();
        List<Held<T>> kept = new ArrayList<>(held.size());
        for (Held<T> h : held) {
            if (settled.test(h)) {
                removed.add(h.op);
                if (h.pastCap) {
                    pastCapCount--;
                }
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
