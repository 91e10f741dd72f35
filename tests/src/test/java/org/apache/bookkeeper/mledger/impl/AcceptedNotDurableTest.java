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
import static org.testng.Assert.assertTrue;
import java.util.List;
import java.util.Map;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.mledger.PositionFactory;
import org.testng.annotations.Test;

/**
 * Which write holds an accepted ack: issued after it was applied, and serializing it (the written
 * position covers it, or the mark-delete position had not moved past the written one); and which acks
 * a reset supersedes; what a record cut at its caps, or written with other properties, leaves held.
 */
@Test(groups = FORK_ONLY)
public class AcceptedNotDurableTest {
    private static final Map<String, Long> NONE = Map.of();

    private static Position pos(long entryId) {
        return PositionFactory.create(3, entryId);
    }

    private static AppliedAck markDelete(long entryId, long generation) {
        return AppliedAck.markDelete(null, pos(entryId), null, generation, -1);
    }

    private static AppliedAck delete(long first, long last, long generation) {
        return AppliedAck.individual(null, pos(first), pos(last), generation);
    }

    public void aWriteIssuedBeforeTheAckWasAppliedDoesNotHoldIt() {
        AcceptedNotDurable<String> held = new AcceptedNotDurable<>();
        held.add("md@5", 10, markDelete(5, 0));
        assertEquals(held.heldBy(pos(9), NONE, 9, 9, pos(9), null), List.of(), "covers sequence numbers up to 9 only");
        assertEquals(held.size(), 1);
        assertEquals(held.heldBy(pos(9), NONE, 10, 10, pos(9), null), List.of("md@5"));
        assertTrue(held.isEmpty());
    }

    public void aWriteOfAnEarlierPositionHoldsOnlyWhatItSerialized() {
        AcceptedNotDurable<String> held = new AcceptedNotDurable<>();
        held.add("md@5", 10, markDelete(5, 0));
        held.add("md@2", 11, markDelete(2, 0));
        // Written at 4 while the mark-delete position was already 5: 5 is in neither position nor ranges.
        assertEquals(held.heldBy(pos(4), NONE, 20, 20, pos(5), null), List.of("md@2"));
        assertEquals(held.heldBy(pos(5), NONE, 20, 20, pos(5), null), List.of("md@5"));
    }

    public void anIndividualAckAboveTheMarkDeleteIsInTheSerializedRanges() {
        AcceptedNotDurable<String> held = new AcceptedNotDurable<>();
        held.add("delete@7", 10, delete(7, 7, 0));
        held.add("delete@5", 11, delete(5, 5, 0));
        // Written at 1, mark-delete 6 when it completed: 7 was still a range, 5 had been absorbed.
        assertEquals(held.heldBy(pos(1), NONE, 20, 20, pos(6), null), List.of("delete@7"));
        assertEquals(held.heldBy(pos(6), NONE, 20, 20, pos(6), null),
                List.of("delete@5"), "a write at the mark-delete holds all");
    }

    public void aResetSupersedesEveryAckAppliedBeforeItsStateChange() {
        AcceptedNotDurable<String> held = new AcceptedNotDurable<>();
        held.add("md@5", 10, markDelete(5, 0));
        held.add("delete@8", 12, delete(8, 8, 0));
        held.add("after", 30, delete(2, 2, 1));
        assertEquals(held.supersededBy(1), List.of("md@5", "delete@8"), "reset wins: ordered before it");
        assertEquals(held.drain(), List.of("after"));
        assertTrue(held.isEmpty());
    }

    public void anAckPastTheCapsWaitsForARecordThatIsNotCutBelowIt() {
        AcceptedNotDurable<String> held = new AcceptedNotDurable<>();
        held.add("delete@7", 10, delete(7, 7, 0));
        held.add("delete@9", 11, delete(9, 9, 0));
        held.add("md@2", 12, markDelete(2, 0));
        // Written at 2, the ranges cut after 8: 9 is past the caps, 7 is in the record.
        assertEquals(held.heldBy(pos(2), NONE, 20, 20, pos(2), pos(8)), List.of("delete@7", "md@2"));
        assertEquals(held.pastCapCount(), 1);
        assertTrue(!held.waitsForWrite(), "a write of its own would be cut the same way");
        held.add("delete@4", 21, delete(4, 4, 0));
        assertTrue(held.waitsForWrite());
        assertEquals(held.heldBy(pos(2), NONE, 30, 30, pos(2), null), List.of("delete@9", "delete@4"));
        assertEquals(held.pastCapCount(), 0);
    }

    public void aMarkDeleteWithPropertiesIsNotHeldByAnOlderRecordWithOthers() {
        AcceptedNotDurable<String> held = new AcceptedNotDurable<>();
        held.add("md@6{k=6}", 10, AppliedAck.markDelete(null, pos(6), Map.of("k", 6L), 0, 10));
        // Written at 1 with {k=1}, the mark-delete already 6: the position is in the absorbed range only.
        assertEquals(held.heldBy(pos(1), Map.of("k", 1L), 20, 20, pos(1), null), List.of());
        assertEquals(held.heldBy(pos(1), Map.of("k", 6L), 20, 20, pos(1), null), List.of("md@6{k=6}"));
        held.add("md@7{k=7}", 21, AppliedAck.markDelete(null, pos(7), Map.of("k", 7L), 0, 21));
        assertEquals(held.heldBy(pos(7), Map.of("k", 1L), 30, 30, pos(7), null), List.of("md@7{k=7}"),
                "a record at its position or later holds the state that mark-delete left");
    }

    public void aMarkDeleteIsHeldByARecordAtItsPositionOnlyWithItsOrNewerProperties() {
        AcceptedNotDurable<String> held = new AcceptedNotDurable<>();
        held.add("md@6{k=6}", 10, AppliedAck.markDelete(null, pos(6), Map.of("k", 6L), 0, 10));
        // A write of p6 issued after it, carrying the properties of a mark-delete at p6 applied before it.
        assertEquals(held.heldBy(pos(6), Map.of("k", 2L), 9, 20, pos(6), null), List.of());
        assertEquals(held.heldBy(pos(6), Map.of("k", 6L), 9, 20, pos(6), null), List.of("md@6{k=6}"));
        held.add("md@8{k=8}", 21, AppliedAck.markDelete(null, pos(8), Map.of("k", 8L), 0, 21));
        assertEquals(held.heldBy(pos(8), Map.of("k", 9L), 22, 30, pos(8), null), List.of("md@8{k=8}"),
                "properties of a mark-delete applied after it supersede its own");
    }

    public void aMarkDeleteIsDatedByItsApplyNotByItsQueuedOp() {
        AcceptedNotDurable<String> held = new AcceptedNotDurable<>();
        // Applied at 5, queued as op 10 (its thread was overtaken): a mark-delete at p6 applied at 7 is newer.
        held.add("md@6{k=6}", 10, AppliedAck.markDelete(null, pos(6), Map.of("k", 6L), 0, 5));
        assertEquals(held.heldBy(pos(6), Map.of("k", 4L), 4, 20, pos(6), null), List.of(),
                "properties decided before its own are older, whatever op carries them");
        assertEquals(held.heldBy(pos(6), Map.of("k", 7L), 7, 20, pos(6), null), List.of("md@6{k=6}"),
                "properties decided after its own supersede them, although dated before its op");
    }

    public void acksPastTheCapsBeyondTheLimitAreTakenNewestFirst() {
        AcceptedNotDurable<String> held = new AcceptedNotDurable<>();
        held.add("past@7", 10, delete(7, 7, 0), true);
        held.add("waits@3", 11, delete(3, 3, 0));
        held.add("past@8", 12, delete(8, 8, 0), true);
        held.add("past@9", 13, delete(9, 9, 0), true);
        assertEquals(held.takePastCapBeyond(3), List.of());
        assertEquals(held.takePastCapBeyond(1), List.of("past@8", "past@9"));
        assertEquals(held.pastCapCount(), 1);
        assertEquals(held.size(), 2);
        assertTrue(held.waitsForWrite());
    }
}
