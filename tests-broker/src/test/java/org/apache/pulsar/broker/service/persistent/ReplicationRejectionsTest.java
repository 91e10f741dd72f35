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

import static org.awaitility.Awaitility.await;
import static org.mockito.ArgumentMatchers.any;
import static org.mockito.ArgumentMatchers.anyString;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.when;
import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.bookkeeper.mledger.ManagedCursor;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.mledger.PositionFactory;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.impl.MessageIdImpl;
import org.apache.pulsar.metadata.api.MetadataStoreException;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/**
 * The source side's record of rejections on its own, on every line (5.0.0-M1 has no broker test-jar for the
 * two-cluster test): a replicator cursor whose property writes the test completes, one at a time.
 */
public class ReplicationRejectionsTest {
    private static final Position E3 = PositionFactory.create(12, 3);
    private static final Position E4 = PositionFactory.create(12, 4);
    private static final String KEY3 = "pulsar.replication.rejected.12:3";
    private static final String KEY4 = "pulsar.replication.rejected.12:4";
    private static final Duration WAIT = Duration.ofSeconds(10);

    /** A property write the test completes; the cursor's stored properties change only then. */
    private record Write(String key, String value, CompletableFuture<Void> result) {
    }

    private final Map<String, String> stored = new ConcurrentHashMap<>();
    private final List<Write> writes = new ArrayList<>();
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicBoolean overlapped = new AtomicBoolean();
    private final AtomicBoolean closed = new AtomicBoolean();
    private ScheduledExecutorService executor;
    private ManagedCursor cursor;

    @BeforeMethod(alwaysRun = true)
    public void setUp() {
        stored.clear();
        synchronized (writes) {
            writes.clear();
        }
        inFlight.set(0);
        overlapped.set(false);
        closed.set(false);
        executor = Executors.newSingleThreadScheduledExecutor();
        cursor = mock(ManagedCursor.class);
        when(cursor.getCursorProperties()).thenAnswer(inv -> Map.copyOf(stored));
        when(cursor.getMarkDeletedPosition()).thenReturn(PositionFactory.create(12, 1));
        when(cursor.putCursorProperty(anyString(), anyString()))
                .thenAnswer(inv -> write(inv.getArgument(0), inv.getArgument(1)));
        when(cursor.removeCursorProperty(anyString())).thenAnswer(inv -> write(inv.getArgument(0), null));
        when(cursor.isMessageDeleted(any())).thenReturn(false);
        when(cursor.isClosed()).thenAnswer(inv -> closed.get());
    }

    @AfterMethod(alwaysRun = true)
    public void tearDown() {
        executor.shutdownNow();
    }

    private CompletableFuture<Void> write(String key, String value) {
        if (inFlight.incrementAndGet() > 1) {
            overlapped.set(true);
        }
        CompletableFuture<Void> result = new CompletableFuture<>();
        synchronized (writes) {
            writes.add(new Write(key, value, result));
        }
        return result.whenComplete((v, e) -> inFlight.decrementAndGet());
    }

    private Write awaitWrite(int index) {
        await().atMost(WAIT).until(() -> {
            synchronized (writes) {
                return writes.size() > index;
            }
        });
        synchronized (writes) {
            return writes.get(index);
        }
    }

    private void succeed(Write w) {
        if (w.value() == null) {
            stored.remove(w.key());
        } else {
            stored.put(w.key(), w.value());
        }
        w.result().complete(null);
    }

    private ReplicationRejections newRejections() {
        return new ReplicationRejections("r1-->r2", cursor, executor);
    }

    @Test(groups = FORK_ONLY, timeOut = 30_000)
    public void aRejectionIsDurableBeforeItsRewindAndAFailedWriteIsRetried() {
        ReplicationRejections rejections = newRejections();
        CompletableFuture<Void> recorded = rejections.recordRejection(E3, "Exceed maximum message size");
        Write first = awaitWrite(0);
        assertEquals(first.key(), KEY3);
        first.result().completeExceptionally(new ManagedLedgerException.BadVersionException("concurrent update"));
        Write retry = awaitWrite(1);
        assertFalse(recorded.isDone(), "the rewind must wait until the record is written");
        succeed(retry);
        await().atMost(WAIT).until(recorded::isDone);
        assertFalse(recorded.isCompletedExceptionally());
        assertEquals(stored.get(KEY3), "Exceed maximum message size");
        assertTrue(rejections.isRecorded(E3));
        assertFalse(rejections.isHeld(E3));
    }

    @Test(groups = FORK_ONLY, timeOut = 30_000)
    public void propertyWritesNeverOverlapAndLandInOrder() {
        ReplicationRejections rejections = newRejections();
        CompletableFuture<Void> r3 = rejections.recordRejection(E3, "size");
        CompletableFuture<Void> r4 = rejections.recordRejection(E4, "checksum");
        rejections.hold(E3, "duplicate");
        rejections.confirmed(E4);
        for (int i = 0; i < 4; i++) {
            Write w = awaitWrite(i);
            synchronized (writes) {
                assertEquals(writes.size(), i + 1, "a write started before the previous one completed");
            }
            succeed(w);
        }
        await().atMost(WAIT).until(() -> r3.isDone() && r4.isDone());
        assertFalse(overlapped.get());
        assertEquals(stored, Map.of(KEY3, "held: duplicate"));
        assertTrue(rejections.isHeld(E3));
        assertFalse(rejections.isRecorded(E4));
    }

    @Test(groups = FORK_ONLY, timeOut = 30_000)
    public void aRecordWrittenTwiceIsWrittenOnceAndTheSecondCallerWaitsForIt() {
        ReplicationRejections rejections = newRejections();
        CompletableFuture<Void> first = rejections.recordRejection(E3, "size");
        CompletableFuture<Void> again = rejections.recordRejection(E3, "size");
        Write w = awaitWrite(0);
        assertFalse(again.isDone(), "the rewind of a second refusal must wait for the record too");
        succeed(w);
        await().atMost(WAIT).until(() -> first.isDone() && again.isDone());
        synchronized (writes) {
            assertEquals(writes.size(), 1);
        }
    }

    /** What a broker that takes the topic over finds: the records, except those of entries since released. */
    @Test(groups = FORK_ONLY, timeOut = 30_000)
    public void aNewOwnerReadsTheRecordsAndDropsTheReleasedOnes() {
        stored.put(KEY3, "held: duplicate");
        stored.put(KEY4, "size");
        stored.put("pulsar.replication.rejected.12:1", "held: skipped by an operator");
        stored.put("another.property", "kept");
        ReplicationRejections rejections = newRejections();
        assertTrue(rejections.isHeld(E3));
        assertTrue(rejections.isRecorded(E4));
        assertFalse(rejections.isHeld(E4));
        assertEquals(rejections.recordedCount(), 2);
        Write removal = awaitWrite(0);
        assertEquals(removal.key(), "pulsar.replication.rejected.12:1");
        assertEquals(removal.value(), null);
        succeed(removal);
        assertEquals(stored.get("another.property"), "kept");
    }

    /**
     * Review finding: a cursor whose cached metadata version went stale fails every property write; a rewind
     * that waited for the write forever would stop replication of the topic.
     */
    @Test(groups = FORK_ONLY, timeOut = 30_000)
    public void theRewindGoesAheadAfterFiveFailedWritesWhileTheWriteIsRetried() {
        ReplicationRejections rejections = newRejections();
        CompletableFuture<Void> rewind = rejections.recordRejection(E3, "size");
        for (int i = 0; i < ReplicationRejections.REWIND_AFTER_FAILED_WRITES; i++) {
            assertFalse(rewind.isDone(), "after " + i + " failed attempts");
            // The cursor's own exception, then the metadata store's wrapped in one (the failure the rewind is
            // decided on): both say the version is stale.
            awaitWrite(i).result().completeExceptionally(i < ReplicationRejections.REWIND_AFTER_FAILED_WRITES - 1
                    ? new ManagedLedgerException.BadVersionException("stale")
                    : new ManagedLedgerException.MetaStoreException(
                            new MetadataStoreException.BadVersionException("stale")));
        }
        await().atMost(WAIT).until(rewind::isDone);
        assertFalse(rewind.isCompletedExceptionally());
        assertTrue(rejections.isRecorded(E3), "the in-memory record holds the resend's duplicate receipt");
        succeed(awaitWrite(ReplicationRejections.REWIND_AFTER_FAILED_WRITES));
        assertEquals(stored.get(KEY3), "size");
    }

    /**
     * A record given up when the replicator stops is what the next owner would miss: only a closed cursor
     * ends the retries.
     */
    @Test(groups = FORK_ONLY, timeOut = 30_000)
    public void writesAreRetriedUntilTheCursorIsClosed() {
        ReplicationRejections rejections = newRejections();
        CompletableFuture<Void> rewind = rejections.recordRejection(E3, "size");
        closed.set(true);
        awaitWrite(0).result().completeExceptionally(new ManagedLedgerException("cursor closed"));
        await().atMost(WAIT).until(rewind::isDone);
        assertFalse(rewind.isCompletedExceptionally(), "the rewind is never failed");
        synchronized (writes) {
            assertEquals(writes.size(), 1, "no retry on a closed cursor");
        }
    }

    /** A late report for an entry already deleted (the remote stored another copy): nothing to record or hold. */
    @Test(groups = FORK_ONLY, timeOut = 30_000)
    public void aReleasedEntryIsNeitherRecordedNorHeld() {
        when(cursor.isMessageDeleted(E3)).thenReturn(true);
        ReplicationRejections rejections = newRejections();
        assertTrue(rejections.recordRejection(E3, "size").isDone());
        rejections.hold(E3, "duplicate");
        assertFalse(rejections.isRecorded(E3));
        synchronized (writes) {
            assertEquals(writes.size(), 0);
        }
    }

    /**
     * Review finding: the fence lives in the remote topic owner's memory; a remote topic that moves stores the
     * client's pending later sends first, so a fenced send comes back as a duplicate. It is recorded, with the
     * other sends of its burst, as one range in one write; its duplicate receipt holds it.
     */
    @Test(groups = FORK_ONLY, timeOut = 30_000)
    public void sendsOurRemotesFenceRefusedAreRecordedAsOneRangeAndTheirDuplicateReceiptHoldsThem() {
        ReplicationRejections rejections = newRejections();
        CompletableFuture<Void> refused = rejections.recordRejection(E3, "Exceed maximum message size");
        List<CompletableFuture<Void>> fenced = new ArrayList<>();
        for (int entry = 4; entry <= 6; entry++) {
            fenced.add(rejections.recordRejection(PositionFactory.create(12, entry), "NotAllowedException: "
                    + ReplicatorPublishFences.FENCED + "12:3 was refused (size); the later 12:" + entry
                    + " is refused until it is stored"));
        }
        succeed(awaitWrite(0));
        Write range = awaitWrite(1);
        assertEquals(range.key(), ReplicationRejections.RANGES_KEY);
        assertEquals(range.value(), "12:4-12:6", "one write for the burst, queued behind the first record");
        assertTrue(fenced.stream().noneMatch(CompletableFuture::isDone), "the rewinds wait for the range");
        succeed(range);
        await().atMost(WAIT).until(() -> refused.isDone() && fenced.stream().allMatch(CompletableFuture::isDone));
        synchronized (writes) {
            assertEquals(writes.size(), 2);
        }
        assertEquals(rejections.rangeCount(), 1);

        // The topic moves: the new owner reads the range and holds the duplicate receipt of a fenced send.
        Position e5 = PositionFactory.create(12, 5);
        newOwnerHolds(e5, PositionFactory.create(12, 7));
        Write held = awaitWrite(2);
        assertEquals(held.key(), "pulsar.replication.rejected.12:5", "a held entry gets its own record while there"
                + " is room, for stats-internal and the next owner's skip");
        succeed(held);
        assertTrue(newRejections().isHeld(e5));
    }

    /**
     * Bounded state: beyond {@link ReplicationRejections#MAX_RECORDS} records, rejections go to the ranges, each
     * durable before its rewind; a range write already started is followed by one more, which takes every later
     * rejection along; the ranges go as the mark-delete position passes their ends, not before.
     */
    @Test(groups = FORK_ONLY, timeOut = 60_000)
    public void rejectionsBeyondTheCapAreRecordedAsRangesAndRemovedOnceAcknowledged() {
        AtomicReference<Position> markDelete = new AtomicReference<>(PositionFactory.create(20, 0));
        when(cursor.getMarkDeletedPosition()).thenAnswer(inv -> markDelete.get());
        ReplicationRejections rejections = newRejections();
        int max = ReplicationRejections.MAX_RECORDS;
        for (int i = 1; i <= max; i++) {
            CompletableFuture<Void> rewind = rejections.recordRejection(PositionFactory.create(20, i), "x".repeat(999));
            succeed(awaitWrite(i - 1));
            await().atMost(WAIT).until(rewind::isDone);
        }
        assertEquals(stored.get("pulsar.replication.rejected.20:1").length(), ReplicationRejections.MAX_REASON_LENGTH);

        CompletableFuture<Void> first = rejections.recordRejection(PositionFactory.create(20, 150), "size");
        Write started = awaitWrite(max);
        assertEquals(started.value(), "20:150-20:150");
        CompletableFuture<Void> second = rejections.recordRejection(PositionFactory.create(20, 151), "size");
        CompletableFuture<Void> third = rejections.recordRejection(PositionFactory.create(20, 152), "size");
        succeed(started);
        await().atMost(WAIT).until(first::isDone);
        Write following = awaitWrite(max + 1);
        assertEquals(following.value(), "20:150-20:152");
        assertFalse(second.isDone() || third.isDone(), "written by the write after the one already started");
        succeed(following);
        await().atMost(WAIT).until(() -> second.isDone() && third.isDone());
        synchronized (writes) {
            assertEquals(writes.size(), max + 2);
        }

        Position e151 = PositionFactory.create(20, 151);
        ReplicationRejections next = newOwnerHolds(e151, PositionFactory.create(20, 153));
        assertEquals(next.heldCount(), 1);
        synchronized (writes) {
            assertEquals(writes.size(), max + 2, "no room for its own record: the range has it");
        }

        markDelete.set(e151);
        next.dropReleased();
        for (int i = max + 2; i < 2 * max + 2; i++) {
            succeed(awaitWrite(i));
        }
        assertEquals(stored.keySet(), Set.of(ReplicationRejections.RANGES_KEY), "the range ends after 20:151");
        assertTrue(next.isRecorded(PositionFactory.create(20, 152)));
        assertFalse(next.isHeld(e151), "released by the mark-delete position");

        markDelete.set(PositionFactory.create(20, 152));
        next.dropReleased();
        succeed(awaitWrite(2 * max + 2));
        assertEquals(stored, Map.of());
        assertTrue(next.isEmpty());
    }

    /** A broker that takes the topic over: {@code inside} counts as rejected, {@code outside} not. */
    private ReplicationRejections newOwnerHolds(Position inside, Position outside) {
        ReplicationRejections next = newRejections();
        assertTrue(next.isRecorded(inside));
        assertFalse(next.isRecorded(outside));
        next.hold(inside, "duplicate");
        assertTrue(next.isHeld(inside), "its duplicate receipt holds it");
        return next;
    }

    @Test(groups = FORK_ONLY)
    public void rangesMergeNeighboursAndPastTheirBoundTheClosestOnes() {
        RejectedRanges ranges = RejectedRanges.NONE.with(PositionFactory.create(12, 0))
                .with(PositionFactory.create(12, 2)).with(PositionFactory.create(12, 1));
        assertEquals(ranges.format(), "12:0-12:2");
        ranges = RejectedRanges.NONE;
        List<Position> added = new ArrayList<>();
        for (int i = 0; i <= RejectedRanges.MAX_RANGES; i++) {
            // Gaps of 3, except one of 2 between the last two: those are merged.
            Position position = PositionFactory.create(12, i < RejectedRanges.MAX_RANGES ? 4L * i : 4L * i - 1);
            added.add(position);
            ranges = ranges.with(position);
        }
        assertEquals(ranges.size(), RejectedRanges.MAX_RANGES);
        assertTrue(added.stream().allMatch(ranges::covers));
        long last = 4L * RejectedRanges.MAX_RANGES;
        assertTrue(ranges.covers(PositionFactory.create(12, last - 2)), "between the two merged ones");
        assertFalse(ranges.covers(PositionFactory.create(12, 1)));
        assertTrue(ranges.format().endsWith("12:" + (last - 4) + "-12:" + (last - 1)), ranges.format());
        assertEquals(parse(ranges.format()).format(), ranges.format());
        assertEquals(parse("3:1-3:4,7:0-8:2").format(), "3:1-3:4,7:0-8:2");
        // Review finding: a nested range read back must not shrink what is covered at the next merge.
        assertEquals(parse("12:0-12:10,12:2-12:3,3:4-3:1").format(), "3:1-3:4,12:0-12:10");
        int[] unreadable = {0};
        assertEquals(RejectedRanges.parse("garbage,12:2-12:3", unreadable).format(), "12:2-12:3");
        assertEquals(unreadable[0], 1);
        RejectedRanges two = parse("3:1-3:4,7:0-8:2");
        assertTrue(two.withoutPassed(PositionFactory.create(3, 3)) == two, "no range ends at or before 3:3");
        assertEquals(two.withoutPassed(PositionFactory.create(3, 4)).format(), "7:0-8:2");
        assertTrue(two.withoutPassed(PositionFactory.create(8, 2)).isEmpty());

        // Review finding: with no two neighbours in one ledger, the nearest ledgers are merged, not the first two.
        RejectedRanges ledgers = RejectedRanges.NONE;
        for (int i = 0; i < RejectedRanges.MAX_RANGES; i++) {
            ledgers = ledgers.with(PositionFactory.create(2L * i + 1, 0));
        }
        ledgers = ledgers.with(PositionFactory.create(2L * RejectedRanges.MAX_RANGES, 0));
        assertEquals(ledgers.size(), RejectedRanges.MAX_RANGES);
        assertTrue(ledgers.format().startsWith("1:0-1:0,3:0-3:0"), ledgers.format());
        assertTrue(ledgers.format().endsWith((2 * RejectedRanges.MAX_RANGES - 1) + ":0-"
                + (2 * RejectedRanges.MAX_RANGES) + ":0"), ledgers.format());
    }

    private static RejectedRanges parse(String value) {
        int[] unreadable = {0};
        RejectedRanges parsed = RejectedRanges.parse(value, unreadable);
        assertEquals(unreadable[0], 0, value);
        return parsed;
    }

    /**
     * What an earlier owner wrote: ranges still needed are read as they are; a value with an unreadable part (a
     * later version's format after a rollback) is left as it is, its readable ranges used (review finding:
     * removing it would erase the only record).
     */
    @Test(groups = FORK_ONLY, timeOut = 30_000)
    public void aNewOwnerReadsTheRangesAndLeavesAnUnreadableValueAsItIs() {
        stored.put(ReplicationRejections.RANGES_KEY, "12:2-12:3,12:5-12:9");
        ReplicationRejections rejections = newRejections();
        assertTrue(rejections.isRecorded(PositionFactory.create(12, 7)));
        assertFalse(rejections.isRecorded(PositionFactory.create(12, 4)));
        assertEquals(rejections.rangeCount(), 2);
        synchronized (writes) {
            assertEquals(writes.size(), 0);
        }
        stored.put(ReplicationRejections.RANGES_KEY, "12:5-12:9;v2,12:2-12:3");
        ReplicationRejections partly = newRejections();
        assertTrue(partly.isRecorded(PositionFactory.create(12, 3)));
        assertFalse(partly.isRecorded(PositionFactory.create(12, 7)));
        synchronized (writes) {
            assertEquals(writes.size(), 0, "left as it is");
        }
    }

    /**
     * Review finding: a write that keeps failing (a stale cached version) stops every write queued behind it, so
     * the rewinds waiting for those must go ahead after the same five attempts.
     */
    @Test(groups = FORK_ONLY, timeOut = 30_000)
    public void aWriteThatKeepsFailingLetsTheRewindsQueuedBehindItGoAhead() {
        ReplicationRejections rejections = newRejections();
        CompletableFuture<Void> head = rejections.recordRejection(E3, "size");
        CompletableFuture<Void> behind = rejections.recordRejection(E4, "size");
        for (int i = 0; i < ReplicationRejections.REWIND_AFTER_FAILED_WRITES; i++) {
            assertFalse(behind.isDone(), "after " + i + " failed attempts");
            Write w = awaitWrite(i);
            assertEquals(w.key(), KEY3);
            w.result().completeExceptionally(new ManagedLedgerException.BadVersionException("stale"));
        }
        await().atMost(WAIT).until(() -> head.isDone() && behind.isDone());
        assertTrue(rejections.isRecorded(E4), "the in-memory record holds meanwhile");
        succeed(awaitWrite(ReplicationRejections.REWIND_AFTER_FAILED_WRITES));
        Write queued = awaitWrite(ReplicationRejections.REWIND_AFTER_FAILED_WRITES + 1);
        assertEquals(queued.key(), KEY4);
        succeed(queued);
        assertEquals(stored, Map.of(KEY3, "size", KEY4, "size"));
    }

    /**
     * Review finding: only a stale version (which only a cursor-ledger switch repairs) lets the rewind go ahead
     * without the record; a metadata store that is unreachable for a while is waited out.
     */
    @Test(groups = FORK_ONLY, timeOut = 30_000)
    public void aWriteFailingForAnotherReasonIsWaitedOut() {
        ReplicationRejections rejections = newRejections();
        CompletableFuture<Void> rewind = rejections.recordRejection(E3, "size");
        for (int i = 0; i <= ReplicationRejections.REWIND_AFTER_FAILED_WRITES; i++) {
            awaitWrite(i).result().completeExceptionally(new ManagedLedgerException.MetaStoreException("unreachable"));
        }
        Write retry = awaitWrite(ReplicationRejections.REWIND_AFTER_FAILED_WRITES + 1);
        assertFalse(rewind.isDone(), "the rewind must wait while the store is unreachable");
        succeed(retry);
        await().atMost(WAIT).until(rewind::isDone);
        assertEquals(stored.get(KEY3), "size");
    }

    @Test(groups = FORK_ONLY)
    public void whatCountsAsARejectionAndAsADuplicateReceipt() {
        assertTrue(ReplicationRejections.isRejectedBeforeDeduplication(
                new PulsarClientException.NotAllowedException("Exceed maximum message size")));
        assertTrue(ReplicationRejections.isRejectedBeforeDeduplication(
                new RuntimeException(new PulsarClientException.ChecksumException("checksum"))));
        assertFalse(ReplicationRejections.isRejectedBeforeDeduplication(
                new PulsarClientException.TimeoutException("timeout")));
        assertTrue(ReplicationRejections.isUnconfirmed(new RuntimeException(
                new org.apache.pulsar.client.impl.GeoReplicationUnconfirmedException("t", "p", 12, 3))));
        assertTrue(ReplicationRejections.isDuplicateReceipt(new MessageIdImpl(-1, -1, -1)));
        assertTrue(ReplicationRejections.isDuplicateReceipt(null));
        assertFalse(ReplicationRejections.isDuplicateReceipt(new MessageIdImpl(7, 2, -1)));
    }
}
