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
import java.util.Iterator;
import java.util.List;
import org.apache.bookkeeper.mledger.Position;

/**
 * Acks the mark-delete rate limiter kept from being written (#26484): applied in memory and reported
 * "accepted", their durable completion waits for a cursor-ledger write that holds them. Upstream
 * reported them complete at once.
 *
 * <p>A write holds an ack when it was issued after the ack was applied (its covered sequence number is
 * at least the ack's: individual acks are written as ranges, so the position alone cannot tell) and
 * writes a position at or after the ack's. A reset's write holds every ack applied before it: "reset
 * wins", the ack is ordered before the reset.
 *
 * <p>Not thread-safe: the cursor guards it with the {@code pendingMarkDeleteOps} monitor.
 */
final class AcceptedNotDurable<T> {

    private static final class Held<T> {
        final T op;
        final long seq;
        final Position position;

        Held(T op, long seq, Position position) {
            this.op = op;
            this.seq = seq;
            this.position = position;
        }
    }

    private final List<Held<T>> held = new ArrayList<>();

    void add(T op, long seq, Position position) {
        held.add(new Held<>(op, seq, position));
    }

    boolean isEmpty() {
        return held.isEmpty();
    }

    int size() {
        return held.size();
    }

    /** Removes and returns the acks a write of {@code position}, covering sequence numbers up to coveredSeq, holds. */
    List<T> heldBy(Position position, long coveredSeq, boolean resetWrite) {
        if (held.isEmpty()) {
            return Collections.emptyList();
        }
        List<T> covered = new ArrayList<>();
        for (Iterator<Held<T>> it = held.iterator(); it.hasNext(); ) {
            Held<T> h = it.next();
            if (h.seq <= coveredSeq && (resetWrite || h.position.compareTo(position) <= 0)) {
                covered.add(h.op);
                it.remove();
            }
        }
        return covered;
    }

    /** Removes and returns every held ack (close). */
    List<T> drain() {
        List<T> all = new ArrayList<>(held.size());
        for (Held<T> h : held) {
            all.add(h.op);
        }
        held.clear();
        return all;
    }
}
