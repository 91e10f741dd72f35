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
import java.util.Collections;
import java.util.List;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.mledger.PositionFactory;

/**
 * Rejected source positions written down as ranges, one cursor property for all of them (#26113): the sends the
 * remote's fence refused, and the rejections beyond {@link ReplicationRejections#MAX_RECORDS}. Immutable.
 *
 * <p>A range holds positions of one ledger rejected one after another (a fence refuses every send in flight
 * after the refused one, so a burst is one range) and nothing else, until there are more than
 * {@link #MAX_RANGES}: then the two ranges closest to each other (in the same ledger first, then in the nearest
 * ledgers) are merged, and the merged one also covers the entries between them. A duplicate receipt for such an
 * entry holds it although the remote may have stored it: a false hold, never a loss, and only past that bound.
 */
final class RejectedRanges {
    static final int MAX_RANGES = 16;
    static final RejectedRanges NONE = new RejectedRanges(List.of());

    // Sorted, disjoint, not adjacent within a ledger; each {lowest, highest}.
    private final List<Position[]> ranges;

    private RejectedRanges(List<Position[]> ranges) {
        this.ranges = ranges;
    }

    boolean isEmpty() {
        return ranges.isEmpty();
    }

    int size() {
        return ranges.size();
    }

    boolean covers(Position position) {
        for (Position[] range : ranges) {
            if (position.compareTo(range[0]) >= 0 && position.compareTo(range[1]) <= 0) {
                return true;
            }
        }
        return false;
    }

    /** This, or new ranges that also cover the position. */
    RejectedRanges with(Position position) {
        if (covers(position)) {
            return this;
        }
        List<Position[]> added = new ArrayList<>(ranges.size() + 1);
        added.addAll(ranges);
        added.add(new Position[] {position, position});
        return normalized(added);
    }

    // Sorted, with overlapping and adjacent ranges joined, then at most MAX_RANGES: the form every instance has.
    private static RejectedRanges normalized(List<Position[]> ranges) {
        ranges.sort((a, b) -> a[0].compareTo(b[0]));
        List<Position[]> merged = new ArrayList<>(ranges.size());
        for (Position[] range : ranges) {
            Position[] last = merged.isEmpty() ? null : merged.get(merged.size() - 1);
            boolean joins = last != null && (range[0].compareTo(last[1]) <= 0
                    || (last[1].getLedgerId() == range[0].getLedgerId()
                    && last[1].getEntryId() + 1 == range[0].getEntryId()));
            if (joins) {
                merged.set(merged.size() - 1, new Position[] {last[0], max(last[1], range[1])});
            } else {
                merged.add(range);
            }
        }
        while (merged.size() > MAX_RANGES) {
            int closest = closestPair(merged);
            merged.set(closest, new Position[] {merged.get(closest)[0], merged.get(closest + 1)[1]});
            merged.remove(closest + 1);
        }
        return merged.isEmpty() ? NONE : new RejectedRanges(Collections.unmodifiableList(merged));
    }

    private static Position max(Position a, Position b) {
        return a.compareTo(b) >= 0 ? a : b;
    }

    // The index of the first of the two neighbours closest to each other: fewest ledgers apart, then fewest
    // entries apart (a merge covers everything between them).
    private static int closestPair(List<Position[]> ranges) {
        int best = 0;
        long bestLedgers = Long.MAX_VALUE;
        long bestEntries = Long.MAX_VALUE;
        for (int i = 0; i + 1 < ranges.size(); i++) {
            Position end = ranges.get(i)[1];
            Position start = ranges.get(i + 1)[0];
            long ledgers = start.getLedgerId() - end.getLedgerId();
            long entries = ledgers == 0 ? start.getEntryId() - end.getEntryId() : start.getEntryId();
            if (ledgers < bestLedgers || (ledgers == bestLedgers && entries < bestEntries)) {
                best = i;
                bestLedgers = ledgers;
                bestEntries = entries;
            }
        }
        return best;
    }

    /** Without the ranges the mark-delete position has passed: their entries are acknowledged. */
    RejectedRanges withoutPassed(Position markDelete) {
        if (markDelete == null) {
            return this;
        }
        List<Position[]> kept = new ArrayList<>(ranges.size());
        for (Position[] range : ranges) {
            if (range[1].compareTo(markDelete) > 0) {
                kept.add(range);
            }
        }
        return kept.size() == ranges.size() ? this
                : kept.isEmpty() ? NONE : new RejectedRanges(Collections.unmodifiableList(kept));
    }

    /** {@code <ledgerId>:<entryId>-<ledgerId>:<entryId>}, comma-separated. */
    String format() {
        StringBuilder value = new StringBuilder();
        for (Position[] range : ranges) {
            if (value.length() > 0) {
                value.append(',');
            }
            value.append(format(range[0])).append('-').append(format(range[1]));
        }
        return value.toString();
    }

    private static String format(Position position) {
        return position.getLedgerId() + ":" + position.getEntryId();
    }

    /**
     * The ranges a property value names, in the form {@link #with} keeps (a value written by hand may overlap or
     * name its ends the other way round). A part that is not {@code <ledgerId>:<entryId>-<ledgerId>:<entryId>}
     * is left out and counted in {@code unreadable}: the caller must not take the result for the whole record.
     */
    static RejectedRanges parse(String value, int[] unreadable) {
        List<Position[]> parsed = new ArrayList<>();
        for (String range : value == null ? new String[0] : value.split(",")) {
            String[] ends = range.trim().split("-");
            Position low = ends.length == 2 ? position(ends[0]) : null;
            Position high = ends.length == 2 ? position(ends[1]) : null;
            if (low == null || high == null) {
                unreadable[0]++;
            } else {
                parsed.add(low.compareTo(high) <= 0 ? new Position[] {low, high} : new Position[] {high, low});
            }
        }
        return normalized(parsed);
    }

    private static Position position(String value) {
        String[] parts = value.split(":");
        try {
            return parts.length == 2 ? PositionFactory.create(Long.parseLong(parts[0]), Long.parseLong(parts[1]))
                    : null;
        } catch (NumberFormatException e) {
            return null;
        }
    }
}
