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
import static org.testng.Assert.assertTrue;
import org.apache.bookkeeper.mledger.PositionFactory;
import org.testng.annotations.Test;

/**
 * Which in-memory ranges and batch-index entries a record must keep because the record before it held them.
 * Ranges are (lower, upper] in ledger 3.
 */
@Test(groups = FORK_ONLY)
public class RecordPinsTest {

    private static void write(RecordPins.Ranges pass, long lower, long upper) {
        pass.written(3, lower, 3, upper);
    }

    // A record that held the ranges (bounds[0], bounds[1]], (bounds[2], bounds[3]], ...
    private static RecordPins lastRecordHeld(long... bounds) {
        RecordPins pins = new RecordPins();
        RecordPins.Ranges record = pins.ranges();
        for (int i = 0; i < bounds.length; i += 2) {
            write(record, bounds[i], bounds[i + 1]);
        }
        record.done();
        return pins;
    }

    public void aRangeThatMeetsOneTheLastRecordHeldIsPinned() {
        RecordPins pins = lastRecordHeld(6, 7, 8, 9);

        RecordPins.Ranges next = pins.ranges();
        assertEquals(next.pinnedAhead(), 2);
        assertFalse(next.pinned(3, 4, 3, 5), "p5 is new");
        assertEquals(next.pinnedAhead(), 2, "both pins lie above p5");
        assertTrue(next.pinned(3, 6, 3, 8), "(p6, p8] grew from (p6, p7] by an ack of p8");
        assertEquals(next.pinnedAhead(), 1);
        assertTrue(next.pinned(3, 8, 3, 9));
        assertEquals(next.pinnedAhead(), 0);
        assertFalse(next.pinned(3, 10, 3, 11));
    }

    public void twoPinsInOneRangeCountOnce() {
        RecordPins pins = lastRecordHeld(6, 7, 8, 9);

        RecordPins.Ranges next = pins.ranges();
        assertTrue(next.pinned(3, 5, 3, 9), "the holes between them closed: one range");
        assertEquals(next.pinnedAhead(), 0);
    }

    public void anEntryAcknowledgedWholeSinceTheLastRecordPinsItsRange() {
        RecordPins pins = new RecordPins();
        RecordPins.Entries entries = pins.entries();
        entries.written(PositionFactory.create(3, 7));
        entries.done();
        // The next record's entries: p7 is no longer one, it is in the range (p6, p7].
        pins.entries().done();

        RecordPins.Ranges next = pins.ranges();
        assertFalse(next.pinned(3, 4, 3, 5));
        assertTrue(next.pinned(3, 6, 3, 7));
        assertTrue(pins.anyAbove(PositionFactory.create(3, 5)));
        assertFalse(pins.anyAbove(PositionFactory.create(3, 7)));
    }

    public void anEntryAcknowledgedWholeIsRoomTheRangesLeave() {
        RecordPins pins = new RecordPins();
        RecordPins.Ranges ranges = pins.ranges();
        write(ranges, 1, 2);
        ranges.done();
        RecordPins.Entries entries = pins.entries();
        entries.written(PositionFactory.create(3, 5));
        entries.written(PositionFactory.create(3, 7));
        entries.done();

        // p7 is acknowledged whole, p5 still partial, the mark-delete position at p0.
        assertEquals(pins.convertEntries(p -> p.getEntryId() == 5, PositionFactory.create(3, 0)), 2,
                "the range (p1, p2] and the one that holds p7");
        RecordPins.Ranges next = pins.ranges();
        assertEquals(next.convertedAhead(), 1);
        assertTrue(next.pinned(3, 1, 3, 2));
        assertEquals(next.convertedAhead(), 1);
        assertTrue(next.pinned(3, 6, 3, 7));
        assertEquals(next.convertedAhead(), 0);
    }

    public void anEntryTheLastRecordHeldIsPinned() {
        RecordPins pins = new RecordPins();
        RecordPins.Entries first = pins.entries();
        first.written(PositionFactory.create(3, 7));
        first.written(PositionFactory.create(3, 9));
        first.done();

        RecordPins.Entries next = pins.entries();
        assertEquals(next.pinnedAhead(), 2);
        assertFalse(next.pinned(PositionFactory.create(3, 5)));
        assertTrue(next.pinned(PositionFactory.create(3, 7)));
        assertEquals(next.pinnedAhead(), 1);
        assertFalse(next.pinned(PositionFactory.create(3, 8)));
        assertTrue(next.pinned(PositionFactory.create(3, 9)));
        assertEquals(next.pinnedAhead(), 0);
    }

    public void aResetClearsThePins() {
        RecordPins pins = new RecordPins();
        RecordPins.Ranges first = pins.ranges();
        write(first, 6, 7);
        first.done();
        pins.clear();
        assertEquals(pins.ranges().pinnedAhead(), 0);
        assertFalse(pins.anyAbove(PositionFactory.create(3, 0)));
    }

    /**
     * A pass writes into an array of an earlier pass: never into the pins it reads (the last record's), over
     * records that grow, shrink to nothing, move, and passes left unfinished.
     */
    public void aPassNeverWritesIntoThePinsItReads() {
        RecordPins pins = lastRecordHeld(2, 3);
        long[] held = {2};
        for (int record = 1; record <= 40; record++) {
            if (record % 5 == 0) {
                pins.ranges().written(3, 7, 3, 8);
            }
            long[] lowers = new long[record % 10 == 0 ? 0 : record % 7 + 1];
            for (int i = 0; i < lowers.length; i++) {
                lowers[i] = 1000L * (record % 3) + 10L * i;
            }
            RecordPins.Ranges next = pins.ranges();
            for (long lower : lowers) {
                write(next, lower, lower + 1);
            }
            for (long lower : held) {
                assertTrue(next.pinned(3, lower, 3, lower + 1), "record " + record + ": (" + lower + ", "
                        + (lower + 1) + "] held by the last record");
            }
            assertEquals(next.pinnedAhead(), 0);
            next.done();
            assertEquals(pins.rangeCount(), lowers.length);
            held = lowers;
        }
    }

    public void anEntriesPassNeverWritesIntoTheEntriesItReads() {
        RecordPins pins = new RecordPins();
        for (long entry = 1; entry <= 20; entry++) {
            RecordPins.Entries pass = pins.entries();
            // Every other record holds no entry: the arrays of the two records before it are spare then.
            if (entry % 2 == 0) {
                pass.written(PositionFactory.create(3, 100 - entry));
            }
            pass.done();
            RecordPins.Entries next = pins.entries();
            next.written(PositionFactory.create(3, entry));
            next.written(PositionFactory.create(3, entry + 200));
            assertEquals(next.pinnedAhead(), entry % 2 == 0 ? 1 : 0, "entry " + entry);
            assertEquals(next.pinned(PositionFactory.create(3, 100 - entry)), entry % 2 == 0, "entry " + entry);
            next.done();
            assertTrue(pins.anyAbove(PositionFactory.create(3, entry + 199)), "entry " + entry);
        }
    }
}
