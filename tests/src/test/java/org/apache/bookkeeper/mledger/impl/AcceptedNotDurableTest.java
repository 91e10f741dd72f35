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

/** Which write holds an accepted ack: issued after it was applied, of a position at or after it. */
@Test(groups = FORK_ONLY)
public class AcceptedNotDurableTest {
    private static Position pos(long entryId) {
        return PositionFactory.create(3, entryId);
    }

    public void aWriteIssuedBeforeTheAckWasAppliedDoesNotHoldIt() {
        AcceptedNotDurable<String> held = new AcceptedNotDurable<>();
        held.add("ack@5", 10, pos(5));
        assertEquals(held.heldBy(pos(9), 9, false), List.of(), "covers sequence numbers up to 9 only");
        assertEquals(held.size(), 1);
        assertEquals(held.heldBy(pos(9), 10, false), List.of("ack@5"));
        assertTrue(held.isEmpty());
    }

    public void aWriteOfAnEarlierPositionDoesNotHoldIt() {
        AcceptedNotDurable<String> held = new AcceptedNotDurable<>();
        held.add("ack@5", 10, pos(5));
        held.add("ack@2", 11, pos(2));
        assertEquals(held.heldBy(pos(4), 20, false), List.of("ack@2"));
        assertEquals(held.heldBy(pos(5), 20, false), List.of("ack@5"));
    }

    public void aResetWriteHoldsEveryAckAppliedBeforeIt() {
        AcceptedNotDurable<String> held = new AcceptedNotDurable<>();
        held.add("ack@5", 10, pos(5));
        held.add("ack@8", 12, pos(8));
        held.add("later", 30, pos(9));
        assertEquals(held.heldBy(pos(0), 20, true), List.of("ack@5", "ack@8"), "reset wins: ordered before it");
        assertEquals(held.drain(), List.of("later"));
        assertTrue(held.isEmpty());
    }
}
