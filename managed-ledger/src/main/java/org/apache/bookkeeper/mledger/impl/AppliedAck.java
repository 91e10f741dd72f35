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

import java.util.Map;
import org.apache.bookkeeper.mledger.AsyncCallbacks.DeleteCallback;
import org.apache.bookkeeper.mledger.AsyncCallbacks.MarkDeleteCallback;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.Position;

/**
 * The callback of an ack, with what the ack changed: the positions it acknowledged and the reset
 * generation in which it was applied. A cursor-ledger write may complete an ack only if the state it
 * serialized contains the ack, and an ack applied before a reset's state change is ordered before the
 * reset, which supersedes it.
 *
 * <p>A mark-delete acknowledges everything up to {@code last} ({@code first} is null); individual
 * deletes acknowledge positions from {@code first} to {@code last}, some of them possibly only as
 * ranges or batch indexes above the mark-delete position.
 */
final class AppliedAck implements MarkDeleteCallback {
    private final MarkDeleteCallback delegate;
    // An individual delete's callback, called directly: no adapter object per ack.
    private final DeleteCallback deleteDelegate;
    private final Position first;
    private final Position last;
    // A mark-delete's own properties (null: it inherits the cursor's, or it is an individual delete).
    private final Map<String, Long> properties;
    final long resetGeneration;
    // When the properties this ack carries were decided, in the cursor's operation sequence: a mark-delete's own
    // at its apply, under the cursor's write lock; inherited ones, those of the mark-delete they come from. Two
    // threads may apply two acks in one order and queue them in the other: dated by its queued op, the older
    // properties would look newer. -1: not dated, the op's sequence number stands for it.
    private long propertiesSeq = -1;

    private AppliedAck(MarkDeleteCallback delegate, DeleteCallback deleteDelegate, Position first, Position last,
                       Map<String, Long> properties, long resetGeneration) {
        this.delegate = delegate;
        this.deleteDelegate = deleteDelegate;
        this.first = first;
        this.last = last;
        this.properties = properties;
        this.resetGeneration = resetGeneration;
    }

    /** Under the cursor's write lock, with the ack applied: {@code propertiesSeq} dates its own properties. */
    static AppliedAck markDelete(MarkDeleteCallback delegate, Position position, Map<String, Long> properties,
                                 long resetGeneration, long propertiesSeq) {
        AppliedAck ack = new AppliedAck(delegate, null, null, position, properties, resetGeneration);
        ack.propertiesSeq = properties != null ? propertiesSeq : -1;
        return ack;
    }

    static AppliedAck individual(DeleteCallback delegate, Position first, Position last, long resetGeneration) {
        return new AppliedAck(null, delegate, first, last, null, resetGeneration);
    }

    /** Dates the properties this ack inherits, before its op is queued (only the applying thread sees it yet). */
    void inheritsPropertiesDated(long seq) {
        propertiesSeq = seq;
    }

    /** When this ack's properties were decided, or {@code opSeq}, its op's, if that is not known. */
    long propertiesSeqOr(long opSeq) {
        return propertiesSeq >= 0 ? propertiesSeq : opSeq;
    }

    /** The ack behind a queued operation's callback, or null for the cursor's own writes. */
    static AppliedAck of(MarkDeleteCallback callback) {
        return callback instanceof AppliedAck ? (AppliedAck) callback : null;
    }

    /**
     * Whether a durable record of mark-delete position {@code written} with {@code writtenProperties}, issued
     * after this ack was applied and completed when the mark-delete position was {@code markDeleteAfter},
     * contains this ack.
     *
     * <p>The write serialized the ranges live, after the ack was applied: an acknowledged position above
     * {@code written} was in them unless the mark-delete position had passed it by then, which it can only
     * have done up to {@code markDeleteAfter} (no reset runs while a write is in flight). A write at or
     * past {@code markDeleteAfter} therefore contains every ack applied before it, within two limits:
     * <ul>
     * <li>the caps ({@code maxUnackedRangesToPersist}, {@code maxBatchDeletedIndexToPersist}) cut the ranges
     * and batch indexes above {@code heldUpTo} (null: not cut); they are serialized lowest first, so an ack up
     * to that bound is in the record whole and one past it not at all;</li>
     * <li>a mark-delete the written position is behind is held only as the range that position absorbed,
     * with the properties of the written, older position: a mark-delete that came with properties of its
     * own (the compaction cursor's compacted ledger, deduplication's sequence ids) is held only if they are
     * the same.</li>
     * </ul>
     * A record at the mark-delete's own position holds its properties if they are the same or the record's
     * are newer ({@code writtenPropertiesSeq}: when they were decided, at or after {@code propertiesSeq}, those
     * of a mark-delete applied after this one); a record past its position carries those of a later mark-delete.
     */
    boolean heldBy(Position written, Map<String, Long> writtenProperties, long writtenPropertiesSeq, long opSeq,
                   Position markDeleteAfter, Position heldUpTo) {
        int c = last.compareTo(written);
        if (c < 0) {
            return true;
        }
        if (c == 0) {
            return properties == null || writtenPropertiesSeq >= propertiesSeqOr(opSeq)
                    || properties.equals(writtenProperties);
        }
        return (properties == null || properties.equals(writtenProperties))
                && serializedBy(written, markDeleteAfter) && (heldUpTo == null || last.compareTo(heldUpTo) <= 0);
    }

    /**
     * Whether the record would hold this ack but for its caps: the next record that is not cut below it
     * does, so it needs no write of its own (one would be cut the same way).
     */
    boolean pastCapOf(Position written, Position markDeleteAfter, Position heldUpTo) {
        return heldUpTo != null && last.compareTo(written) > 0 && last.compareTo(heldUpTo) > 0
                && serializedBy(written, markDeleteAfter);
    }

    private boolean serializedBy(Position written, Position markDeleteAfter) {
        return written.compareTo(markDeleteAfter) >= 0 || (first != null && first.compareTo(markDeleteAfter) > 0);
    }

    /** Whether a durable record of mark-delete position {@code markDelete} holds this ack, whenever written. */
    boolean coveredBy(Position markDelete) {
        return last.compareTo(markDelete) <= 0;
    }

    @Override
    public void markDeleteComplete(Object ctx) {
        if (deleteDelegate != null) {
            deleteDelegate.deleteComplete(ctx);
        } else {
            delegate.markDeleteComplete(ctx);
        }
    }

    @Override
    public void markDeleteFailed(ManagedLedgerException exception, Object ctx) {
        if (deleteDelegate != null) {
            deleteDelegate.deleteFailed(exception, ctx);
        } else {
            delegate.markDeleteFailed(exception, ctx);
        }
    }

    @Override
    public String toString() {
        return "AppliedAck[" + (first == null ? "<= " + last : first + ".." + last) + ", reset generation "
                + resetGeneration + "]";
    }
}
