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
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.mledger.PositionFactory;
import org.testng.annotations.Test;

/**
 * Which write holds an accepted ack: issued after it was applied, and serializing it (the written
 * position covers it, or the mark-delete position had not moved past the written one); and which acks
 * a reset supersedes.
 */
@Test(groups = FORK_ONLY)
public class AcceptedNotDurableTest {
    private static Position pos(long entryId) {
        return PositionFactory.create(3, entryId);
    }

    private static AppliedAck markDelete(long entryId, long generation) {
        return AppliedAck.markDelete(null, pos(entryId), generation);
    }

    private static AppliedAck delete(long first, long last, long generation) {
        return AppliedAck.individual(null, pos(first), pos(last), generation);
    }

    public void aWriteIssuedBeforeTheAckWasAppliedDoesNotHoldIt() {
        AcceptedNotDurable<String> held = new AcceptedNotDurable<>();
        held.add("md@5", 10, markDelete(5, 0));
        assertEquals(held.heldBy(pos(9), 9, pos(9)), List.of(), "covers sequence numbers up to 9 only");
        assertEquals(held.size(), 1);
        assertEquals(held.heldBy(pos(9), 10, pos(9)), List.of("md@5"));
        assertTrue(held.isEmpty());
    }

    public void aWriteOfAnEarlierPositionHoldsOnlyWhatItSerialized() {
        AcceptedNotDurable<String> held = new AcceptedNotDurable<>();
        held.add("md@5", 10, markDelete(5, 0));
        held.add("md@2", 11, markDelete(2, 0));
        // Written at 4 while the mark-delete position was already 5: 5 is in neither position nor ranges.
        assertEquals(held.heldBy(pos(4), 20, pos(5)), List.of("md@2"));
        assertEquals(held.heldBy(pos(5), 20, pos(5)), List.of("md@5"));
    }

    public void anIndividualAckAboveTheMarkDeleteIsInTheSerializedRanges() {
        AcceptedNotDurable<String> held = new AcceptedNotDurable<>();
        held.add("delete@7", 10, delete(7, 7, 0));
        held.add("delete@5", 11, delete(5, 5, 0));
        // Written at 1, mark-delete 6 when it completed: 7 was still a range, 5 had been absorbed.
        assertEquals(held.heldBy(pos(1), 20, pos(6)), List.of("delete@7"));
        assertEquals(held.heldBy(pos(6), 20, pos(6)), List.of("delete@5"), "a write at the mark-delete holds all");
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
}
