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

import static org.apache.pulsar.client.impl.GeoReplicationProducerImpl.MSG_PROP_REPL_SOURCE_POSITION;
import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertNotNull;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import org.apache.pulsar.common.api.proto.MessageMetadata;
import org.apache.pulsar.common.protocol.Commands;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/**
 * The remote side's fence on its own, on every line: a model of the topic's deduplication high-water mark,
 * one replicator producer sending in source order and rewinding as upstream's replicator does.
 */
@Test(groups = FORK_ONLY)
public class ReplicatorPublishFencesTest {
    private static final String PRODUCER = "pulsar.repl.r1";

    private final Map<String, long[]> pushed = new HashMap<>();
    // Created per test, not at construction: the upstream run instantiates this class, where ours is absent.
    private ReplicatorPublishFences fences;

    @BeforeMethod(alwaysRun = true)
    public void reset() {
        pushed.clear();
        fences = new ReplicatorPublishFences(() -> "t", pushed::get);
    }

    private static ByteBuf message(long ledgerId, long entryId) {
        MessageMetadata md = new MessageMetadata().setProducerName(PRODUCER).setSequenceId(entryId)
                .setPublishTime(1);
        md.addProperty().setKey(MSG_PROP_REPL_SOURCE_POSITION).setValue(ledgerId + ":" + entryId);
        return Commands.serializeMetadataAndPayload(Commands.ChecksumType.None, md,
                Unpooled.wrappedBuffer(new byte[1]));
    }

    /** How the topic itself treats a send, before the fence decides. */
    private enum TopicRefusal {
        NONE, TOO_LARGE, BAD_CHECKSUM
    }

    private String send(long entryId, boolean tooLarge) {
        return send(entryId, tooLarge ? TopicRefusal.TOO_LARGE : TopicRefusal.NONE);
    }

    /** What the topic does with a send: null if stored, else the refusal (the broker's order of checks). */
    private String send(long entryId, TopicRefusal topicRefusal) {
        ByteBuf msg = message(7, entryId);
        try {
            if (topicRefusal == TopicRefusal.BAD_CHECKSUM) {
                // Refused by the producer, before the topic (and its fence) sees it.
                fences.refusedUntrusted(PRODUCER, "checksum failed");
                return "checksum failed";
            }
            String refusal = fences.refusal(PRODUCER, msg);
            if (refusal != null) {
                return refusal;
            }
            if (topicRefusal == TopicRefusal.TOO_LARGE) {
                fences.refused(PRODUCER, msg, "too large");
                return "too large";
            }
            long[] highest = pushed.get(PRODUCER);
            if (highest == null || ReplicatorPublishFences.compare(new long[]{7, entryId}, highest) > 0) {
                pushed.put(PRODUCER, new long[]{7, entryId});
            }
            return null;
        } finally {
            msg.release();
        }
    }

    public void laterSendsAreRefusedUntilTheRefusedPositionIsStored() {
        assertNull(send(2, false));
        assertEquals(send(3, true), "too large");
        String refusal = send(4, false);
        assertNotNull(refusal);
        assertTrue(refusal.startsWith(ReplicatorPublishFences.FENCED) && refusal.contains("7:3"), refusal);
        assertNotNull(send(5, false));
        // A duplicate of what was stored goes on to deduplication.
        assertNull(send(2, false));
        // The rewound resend of E3 is stored: the order is restored and the fence lifts.
        assertNull(send(3, false));
        assertTrue(fences.isEmpty());
        assertNull(send(4, false));
        assertNull(send(5, false));
    }

    public void aRefusedResendKeepsTheFence() {
        send(2, false);
        send(3, true);
        assertNotNull(send(4, false));
        assertEquals(send(3, true), "too large");
        assertNotNull(send(4, false));
        assertEquals(fences.size(), 1);
    }

    public void aChecksumFenceRefusesWhatWasInFlightAndLetsTheRewoundResendPass() {
        send(2, false);
        fences.refusedUntrusted(PRODUCER, "checksum failed");
        // E4 and E5 were in flight: refused although nothing says where E3 was.
        assertNotNull(send(4, false));
        assertNotNull(send(5, false));
        // The client's resend of its intact copy, or the replicator's from its mark-delete position.
        assertNull(send(3, false));
        assertTrue(fences.isEmpty());
        assertNull(send(4, false));
    }

    public void aChecksumFenceLetsTheEntryRightAfterTheHighWaterMarkPass() {
        send(2, false);
        fences.refusedUntrusted(PRODUCER, "checksum failed");
        assertNull(send(3, false), "nothing unaccepted can lie between E2 and the refused one");
        assertTrue(fences.isEmpty());
    }

    public void aSecondChecksumRefusalLeavesOnlyTheEntryAfterTheHighWaterMark() {
        send(2, false);
        fences.refusedUntrusted(PRODUCER, "checksum failed");
        // The next one is garbled too: two positions unknown, E3 and maybe E4.
        fences.refusedUntrusted(PRODUCER, "checksum failed");
        assertNotNull(send(5, false));
        assertNotNull(send(4, false), "below what was refused since, but it may be the second unknown one");
        assertNull(send(3, false));
        assertTrue(fences.isEmpty());
    }

    public void aChecksumFenceAtANewSourceLedgerLetsTheResendBelowWhatFollowedPass() {
        pushed.put(PRODUCER, new long[]{7, 9});
        fences.refusedUntrusted(PRODUCER, "checksum failed");
        assertNotNull(refusal(8, 1), "in flight");
        assertNotNull(refusal(8, 2), "in flight");
        assertNull(refusal(8, 0), "below what followed it: the refused one");
        assertTrue(fences.isEmpty());
    }

    public void aChecksumRefusalAtTheStartOfASourceLedgerWithNothingBehindItStalls() {
        // Documented limit: the entry after the high-water mark is in another ledger, and nothing bounds it.
        pushed.put(PRODUCER, new long[]{7, 9});
        fences.refusedUntrusted(PRODUCER, "checksum failed");
        assertNotNull(refusal(8, 0));
        assertNotNull(refusal(8, 0), "the rewound resend is refused too");
        assertEquals(fences.size(), 1);
    }

    private String refusal(long ledgerId, long entryId) {
        ByteBuf msg = message(ledgerId, entryId);
        try {
            return fences.refusal(PRODUCER, msg);
        } finally {
            msg.release();
        }
    }

    public void turningDeduplicationOffClearsTheFences() {
        send(3, true);
        fences.clear();
        assertTrue(fences.isEmpty());
        assertNull(send(4, false));
    }

    public void aRefusalAtOrBelowTheHighWaterMarkFencesNothing() {
        send(2, false);
        send(3, false);
        fences.refused(PRODUCER, message(7, 3), "too large");
        assertTrue(fences.isEmpty());
    }

    public void otherProducerNamesAreNotFenced() {
        send(3, true);
        ByteBuf other = message(7, 9);
        try {
            assertNull(fences.refusal("pulsar.repl.r2", other));
        } finally {
            other.release();
        }
    }

    public void theBrokerConfigurationTurnsItOff() {
        Properties properties = new Properties();
        assertTrue(ReplicatorPublishFences.isEnabled(null));
        assertTrue(ReplicatorPublishFences.isEnabled(properties));
        properties.setProperty(ReplicatorPublishFences.ENABLED_PROPERTY, "false");
        assertFalse(ReplicatorPublishFences.isEnabled(properties));
    }

    /**
     * Many schedules of one replicator against a topic that refuses some sends by size or by checksum (each
     * position at most a few times, so every schedule ends), as upstream's client and replicator react: the
     * client's queue is FIFO and an error acts on its head only (a NotAllowedError for another send is
     * ignored); a checksum error makes the client fail the head if its own copy is corrupt, otherwise resend
     * everything pending; a receipt for a send behind the head, or a reconnect, resends everything pending;
     * the replicator reads from its mark-delete position again after a failed send. Whatever the schedule,
     * the topic stores the positions in source order, each once, and ends unfenced.
     */
    public void everyScheduleStoresAllPositionsInSourceOrder() {
        for (long seed = 0; seed < 5_000; seed++) {
            pushed.clear();
            fences.clear();
            runSchedule(new Random(seed), seed);
            assertTrue(fences.isEmpty(), "seed " + seed);
        }
    }

    private static final int ENTRIES = 20;

    private void runSchedule(Random random, long seed) {
        new Schedule(random, seed).run();
    }

    /**
     * One schedule: the replicator reads from its mark-delete position, a reconnect resends everything pending,
     * and the topic refuses some entries a few times (too large, or a bad checksum the client gives up on).
     */
    private final class Schedule {
        private final Random random;
        private final long seed;
        private final Map<Long, Integer> refusalsLeft = new HashMap<>();
        private final Map<Long, TopicRefusal> refusalKind = new HashMap<>();
        private final Set<Long> acked = new HashSet<>();
        private final Deque<Long> pending = new ArrayDeque<>();
        // What the client sends next in this round; a resend replaces it.
        private Deque<Long> wire;
        private long stored = -1;

        Schedule(Random random, long seed) {
            this.random = random;
            this.seed = seed;
            for (long e = 0; e < ENTRIES; e++) {
                refusalsLeft.put(e, random.nextInt(4) == 0 ? 1 + random.nextInt(3) : 0);
                refusalKind.put(e, random.nextBoolean() ? TopicRefusal.TOO_LARGE : TopicRefusal.BAD_CHECKSUM);
            }
            // The first entry is stored before the schedule starts: the topic knows a high-water mark.
            refusalsLeft.put(0L, 0);
        }

        void run() {
            int rounds = 0;
            while (markDelete(acked) < ENTRIES - 1) {
                assertTrue(++rounds < 3_000, "no progress, seed " + seed);
                wire = read();
                while (!wire.isEmpty()) {
                    sendOne(wire.poll());
                }
            }
            assertEquals(stored, ENTRIES - 1, "seed " + seed);
        }

        // A read from the mark-delete position; one in three rounds is a reconnect that resends what is pending.
        private Deque<Long> read() {
            long first = markDelete(acked) + 1;
            long last = Math.min(ENTRIES - 1, first + random.nextInt(6));
            Deque<Long> read = new ArrayDeque<>();
            for (long e = first; e <= last; e++) {
                if (!acked.contains(e)) {
                    pending.add(e);
                    read.add(e);
                }
            }
            return random.nextInt(3) == 0 ? new ArrayDeque<>(pending) : read;
        }

        private void sendOne(long e) {
            int left = refusalsLeft.get(e);
            TopicRefusal topicRefusal = left > 0 ? refusalKind.get(e) : TopicRefusal.NONE;
            long[] highest = pushed.get(PRODUCER);
            boolean duplicate = highest != null && highest[1] >= e;
            String refusal = send(e, topicRefusal);
            boolean head = !pending.isEmpty() && pending.peekFirst() == e;
            if (refusal == null) {
                receipt(e, duplicate, head);
                return;
            }
            if (!refusal.startsWith(ReplicatorPublishFences.FENCED)) {
                refusalsLeft.put(e, left - 1);
            }
            if (topicRefusal == TopicRefusal.BAD_CHECKSUM) {
                if (head && random.nextBoolean()) {
                    pending.pollFirst();
                } else {
                    wire.addAll(pending);
                }
            } else if (head) {
                pending.pollFirst();
            }
        }

        // A receipt: stored in order unless a duplicate; the client acks the head, and resends after an out of
        // order receipt.
        private void receipt(long e, boolean duplicate, boolean head) {
            if (!duplicate) {
                assertEquals(e, stored + 1, "stored out of order (a gap), seed " + seed);
                stored = e;
            }
            if (head) {
                pending.pollFirst();
                acked.add(e);
            } else if (pending.contains(e)) {
                wire = new ArrayDeque<>(pending);
            }
        }
    }

    private static long markDelete(Set<Long> acked) {
        long m = -1;
        while (acked.contains(m + 1)) {
            m++;
        }
        return m;
    }
}
