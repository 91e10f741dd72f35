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
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.apache.bookkeeper.mledger.PositionFactory;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/** The ordering rules of MarkDeleteQueue, one example each. */
@Test(groups = FORK_ONLY)
public class MarkDeleteQueueTest {
    private static final String RESET = "reset";

    private MarkDeleteQueue<String> queue;

    @BeforeMethod(alwaysRun = true)
    public void newQueue() {
        queue = new MarkDeleteQueue<>(new ArrayDeque<>(), op -> op.startsWith(RESET));
    }

    public void acksUpToTheBarrierAreOneBatchAndTheBarrierWaitsForWritesInFlight() {
        queue.add("a1");
        queue.add("a2");
        queue.add(RESET);
        queue.add("a3");

        MarkDeleteQueue.Batch<String> acks = queue.next(0);
        assertFalse(acks.barrier);
        assertEquals(acks.ops, List.of("a1", "a2"));
        assertNull(queue.next(1), "the barrier waits for the write in flight");

        MarkDeleteQueue.Batch<String> barrier = queue.next(0);
        assertTrue(barrier.barrier);
        assertEquals(barrier.ops, List.of(RESET));
        assertNull(queue.next(0), "nothing behind the barrier is written while it is in flight");
        assertTrue(queue.isBarrierInFlight());

        List<Runnable> after = new ArrayList<>();
        queue.writeFinished(RESET, true, after);
        assertEquals(queue.next(0).ops, List.of("a3"));
        assertTrue(queue.isEmpty());
    }

    public void aSingleAckIsTakenAloneAndLeavesTheQueueEmpty() {
        queue.add("a1");
        assertTrue(queue.mayHaveQueued());
        assertEquals(queue.next(0).ops, List.of("a1"));
        assertTrue(queue.isEmpty());
        assertFalse(queue.mayHaveQueued(), "a completion need not take the monitor once the only ack is taken");
        assertNull(queue.next(0));

        queue.add("a2");
        queue.add("a3");
        assertEquals(queue.next(0).ops, List.of("a2", "a3"));
        assertTrue(queue.isEmpty());
    }

    public void anAckIsTakenAloneOnlyAtAnEmptyQueueWithNoBarrierInFlight() {
        assertTrue(queue.canTakeAlone("a1"));
        assertFalse(queue.mayHaveQueued(), "an ack taken alone never passes through the queue");

        queue.add("a2");
        assertFalse(queue.canTakeAlone("a3"), "behind a queued ack: queued, to keep the order");
        queue.next(0);

        assertFalse(queue.canTakeAlone(RESET), "a barrier is queued, to be written alone once the writes drain");
        queue.add(RESET);
        assertTrue(queue.next(0).barrier);
        assertFalse(queue.canTakeAlone("a4"), "behind the barrier in flight");
        queue.writeFinished(RESET, true, new ArrayList<>());
        assertTrue(queue.canTakeAlone("a4"));
        assertTrue(queue.isEmpty(), "asking takes nothing");
    }

    public void actionsWaitingForTheBarrierRunWhenItFinishes() {
        queue.add(RESET);
        queue.next(0);
        List<String> ran = new ArrayList<>();
        queue.runAfterBarrier(() -> ran.add("close"));

        List<Runnable> after = new ArrayList<>();
        queue.writeFinished(RESET, true, after);
        after.forEach(Runnable::run);
        assertEquals(ran, List.of("close"));
    }

    public void anAckIsAttachedOnlyToAWriteIssuedAfterItWasApplied() {
        queue.writeStarted("w", PositionFactory.create(1, 5), 10);

        assertFalse(queue.attachToCoveringWrite("late", PositionFactory.create(1, 3), 11),
                "applied after the write was issued: not in it");
        assertFalse(queue.attachToCoveringWrite("ahead", PositionFactory.create(1, 6), 9),
                "a position after the write's: not in it");
        assertTrue(queue.attachToCoveringWrite("held", PositionFactory.create(1, 5), 10));

        assertEquals(queue.writeFinished("w", false, new ArrayList<>()), List.of("held"));
        assertEquals(queue.writeFinished("w", false, new ArrayList<>()), List.of(), "returned once");
    }

    public void writesFinishedOutOfOrderReturnWhatWasAttachedToEachOnce() {
        queue.writeStarted("w1", PositionFactory.create(1, 5), 10);
        queue.writeStarted("w2", PositionFactory.create(1, 6), 12);
        assertTrue(queue.attachToCoveringWrite("first", PositionFactory.create(1, 4), 9));
        assertTrue(queue.attachToCoveringWrite("second", PositionFactory.create(1, 4), 9));

        // The newer write completes first (the older one fell back to the metadata store, say).
        assertEquals(queue.ackWriteFinished("w2"), List.of("first", "second"), "the newest covering write");
        assertEquals(queue.ackWriteFinished("w2"), List.of(), "returned once");

        assertTrue(queue.attachToCoveringWrite("third", PositionFactory.create(1, 4), 9),
                "the older write still in flight covers it");
        assertTrue(queue.writeInFlightCovering(10));
        assertFalse(queue.writeInFlightCovering(11), "only the finished write covered it");
        assertEquals(queue.ackWriteFinished("w1"), List.of("third"));

        assertFalse(queue.attachToCoveringWrite("fourth", PositionFactory.create(1, 4), 9), "both finished");
        assertFalse(queue.writeInFlightCovering(0));
    }

    public void deferredAcksKeepTheirOrderAndWaitForTheWritesToDrain() {
        queue.add("a3");
        queue.deferUntilWritesDrain(List.of("a1", "a2"));

        assertNull(queue.next(1));
        assertEquals(queue.next(0).ops, List.of("a1", "a2", "a3"));
    }

    public void drainReturnsEverythingQueuedInOrder() {
        queue.add("a1");
        queue.add(RESET);
        queue.add("a2");
        assertEquals(queue.drain(), List.of("a1", RESET, "a2"));
        assertTrue(queue.isEmpty());
    }
}
