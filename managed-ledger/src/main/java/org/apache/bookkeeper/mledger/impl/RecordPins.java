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

import java.util.Arrays;
import java.util.function.Predicate;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.mledger.PositionFactory;

/**
 * What the cursor's last serialized record held above its mark-delete position: its individually deleted
 * ranges and its entries with batch-index acks. A record may have completed acks with them, so the next
 * record keeps them ahead of newer acks when the caps ({@code maxUnackedRangesToPersist},
 * {@code maxBatchDeletedIndexToPersist}) cut it: filled lowest first, a record would otherwise drop an ack it
 * had held and completed once acks below it add ranges (#25540). Acks only add to the deleted positions, so
 * the in-memory ranges that meet a record's ranges are no more than its ranges: keeping them fits the cap. An
 * entry acknowledged whole since the last record is kept as the range that contains it, in place of its entry:
 * a record then holds more ranges than the range cap and fewer entries, and its ranges and entries together
 * stay within both caps together ({@link #convertEntries}).
 *
 * <p>Ranges are kept as upstream's raw endpoints, lower open and upper closed. A pass writes into the array the
 * pass before it replaced, not a new one: with every ack written at once (no limiter), a record per ack copies
 * thousands of ranges, and a new array per record was a third of the bytes the ack path allocated. Not
 * thread-safe: the cursor reads and replaces it under its write lock, while it serializes a record.
 */
final class RecordPins {
    private static final long[] NONE = new long[0];

    // (lowerLedger, lowerEntry, upperLedger, upperEntry) per range, ascending.
    private long[] ranges = NONE;
    private int rangeCount;
    // (ledger, entry) per batch-index entry, ascending; and those of the record before, which the ranges of a
    // record check once its own entries replaced them (an entry acknowledged whole since is in a range).
    private long[] entries = NONE;
    private int entryCount;
    private long[] previousEntries = NONE;
    private int previousEntryCount;
    // The last record's entries acknowledged whole since, found by the record being serialized.
    private long[] converted = NONE;
    private int convertedCount;
    // Arrays no pin refers to any more, which the next pass writes into. A pass takes its array, so that a pass
    // left unfinished (an exception while serializing) leaves no array shared with the next one.
    private long[] spareRanges = NONE;
    private long[] spareEntries = NONE;

    /** The ranges of the record being serialized, in the order the record holds them. */
    Ranges ranges() {
        return new Ranges();
    }

    /** The batch-index entries of the record being serialized. */
    Entries entries() {
        return new Entries();
    }

    /** A reset's state change: the acks it clears are not kept by the records after it. */
    void clear() {
        ranges = NONE;
        rangeCount = 0;
        converted = NONE;
        convertedCount = 0;
        entries = NONE;
        entryCount = 0;
        previousEntries = NONE;
        previousEntryCount = 0;
    }

    /**
     * Before a record's batch-index pass: finds the last record's entries above {@code markDelete} that are no
     * longer partial ({@code stillPartial} false), acknowledged whole since. Returns the ranges the record must
     * keep at most, the last record's ranges and one per such entry, so that the entries it adds leave room for
     * them.
     */
    int convertEntries(Predicate<Position> stillPartial, Position markDelete) {
        converted = NONE;
        convertedCount = 0;
        for (int i = 0; i < entryCount; i++) {
            long ledgerId = entries[i * 2];
            long entryId = entries[i * 2 + 1];
            if (compare(ledgerId, entryId, markDelete.getLedgerId(), markDelete.getEntryId()) > 0
                    && !stillPartial.test(PositionFactory.create(ledgerId, entryId))) {
                if (convertedCount * 2 == converted.length) {
                    converted = Arrays.copyOf(converted, Math.max(16, converted.length * 2));
                }
                converted[convertedCount * 2] = ledgerId;
                converted[convertedCount * 2 + 1] = entryId;
                convertedCount++;
            }
        }
        return rangeCount + convertedCount;
    }

    private long[] takeSpareRanges(int length) {
        long[] taken = atLeast(spareRanges, length);
        spareRanges = NONE;
        return taken;
    }

    private long[] takeSpareEntries(int length) {
        long[] taken = atLeast(spareEntries, length);
        spareEntries = NONE;
        return taken;
    }

    private static long[] atLeast(long[] spare, int length) {
        int needed = Math.max(16, length);
        return spare.length >= needed ? spare : new long[needed];
    }

    private static long[] larger(long[] a, long[] b) {
        return a.length >= b.length ? a : b;
    }

    int rangeCount() {
        return rangeCount;
    }

    /** Whether the last records held a range or a batch-index entry above {@code position}. */
    boolean anyAbove(Position position) {
        long ledgerId = position.getLedgerId();
        long entryId = position.getEntryId();
        return rangeCount > 0 && compare(ranges[rangeCount * 4 - 2], ranges[rangeCount * 4 - 1], ledgerId, entryId) > 0
                || lastAbove(entries, entryCount, ledgerId, entryId)
                || lastAbove(previousEntries, previousEntryCount, ledgerId, entryId);
    }

    private static boolean lastAbove(long[] entries, int entryCount, long ledgerId, long entryId) {
        return entryCount > 0
                && compare(entries[entryCount * 2 - 2], entries[entryCount * 2 - 1], ledgerId, entryId) > 0;
    }

    private static int compare(long ledgerA, long entryA, long ledgerB, long entryB) {
        int c = Long.compare(ledgerA, ledgerB);
        return c != 0 ? c : Long.compare(entryA, entryB);
    }

    /**
     * A pass over the in-memory ranges, ascending: which of them the last record met, and which it writes
     * now. {@link #done()} makes what it wrote the pins of the next record.
     */
    final class Ranges {
        private int next;
        private int nextConverted;
        private long[] written = takeSpareRanges(rangeCount * 4);
        private int writtenCount;

        /**
         * Whether the range (lower, upper] meets a range of the last record, or contains one of its
         * batch-index entries (an entry acknowledged whole since): it must be in this record.
         */
        boolean pinned(long lowerLedger, long lowerEntry, long upperLedger, long upperEntry) {
            boolean pinned = false;
            while (next < rangeCount) {
                int i = next * 4;
                if (compare(ranges[i + 2], ranges[i + 3], lowerLedger, lowerEntry) <= 0) {
                    // Entirely below this range: at or below the mark-delete position now, or met before.
                    next++;
                } else if (compare(ranges[i], ranges[i + 1], upperLedger, upperEntry) < 0) {
                    pinned = true;
                    next++;
                } else {
                    break;
                }
            }
            while (nextConverted < convertedCount && compare(converted[nextConverted * 2],
                    converted[nextConverted * 2 + 1], upperLedger, upperEntry) <= 0) {
                nextConverted++;
            }
            return pinned || containsEntry(entries, entryCount, lowerLedger, lowerEntry, upperLedger, upperEntry)
                    || containsEntry(previousEntries, previousEntryCount, lowerLedger, lowerEntry, upperLedger,
                    upperEntry);
        }

        /**
         * How many entries of the last record, acknowledged whole since, lie above the ranges passed so far: each
         * is in a range this record keeps, which the ranges it adds leave room for.
         */
        int convertedAhead() {
            return convertedCount - nextConverted;
        }

        private boolean containsEntry(long[] entries, int entryCount, long lowerLedger, long lowerEntry,
                                      long upperLedger, long upperEntry) {
            int low = 0;
            int high = entryCount - 1;
            while (low <= high) {
                int mid = (low + high) >>> 1;
                int i = mid * 2;
                if (compare(entries[i], entries[i + 1], lowerLedger, lowerEntry) <= 0) {
                    low = mid + 1;
                } else if (compare(entries[i], entries[i + 1], upperLedger, upperEntry) > 0) {
                    high = mid - 1;
                } else {
                    return true;
                }
            }
            return false;
        }

        /** How many ranges of the last record lie above the ranges passed so far: at least the pins ahead. */
        int pinnedAhead() {
            return rangeCount - next;
        }

        void written(long lowerLedger, long lowerEntry, long upperLedger, long upperEntry) {
            if (writtenCount * 4 == written.length) {
                written = Arrays.copyOf(written, written.length * 2);
            }
            int i = writtenCount * 4;
            written[i] = lowerLedger;
            written[i + 1] = lowerEntry;
            written[i + 2] = upperLedger;
            written[i + 3] = upperEntry;
            writtenCount++;
        }

        void done() {
            long[] replaced = ranges;
            if (writtenCount == 0) {
                ranges = NONE;
                spareRanges = larger(written, replaced);
            } else {
                ranges = written;
                spareRanges = replaced;
            }
            rangeCount = writtenCount;
        }
    }

    /** A pass over the entries with batch-index acks, ascending. */
    final class Entries {
        private int next;
        private long[] written = takeSpareEntries(entryCount * 2);
        private int writtenCount;

        /** Whether the last record held this entry: it must be in this record. */
        boolean pinned(Position position) {
            while (next < entryCount) {
                int i = next * 2;
                int c = compare(entries[i], entries[i + 1], position.getLedgerId(), position.getEntryId());
                if (c > 0) {
                    return false;
                }
                next++;
                if (c == 0) {
                    return true;
                }
            }
            return false;
        }

        /** How many entries of the last record lie above the entries passed so far. */
        int pinnedAhead() {
            return entryCount - next;
        }

        void written(Position position) {
            if (writtenCount * 2 == written.length) {
                written = Arrays.copyOf(written, written.length * 2);
            }
            written[writtenCount * 2] = position.getLedgerId();
            written[writtenCount * 2 + 1] = position.getEntryId();
            writtenCount++;
        }

        void done() {
            long[] replaced = previousEntries;
            previousEntries = entries;
            previousEntryCount = entryCount;
            if (writtenCount == 0) {
                entries = NONE;
                spareEntries = larger(written, replaced);
            } else {
                entries = written;
                spareEntries = replaced;
            }
            entryCount = writtenCount;
        }
    }
}
