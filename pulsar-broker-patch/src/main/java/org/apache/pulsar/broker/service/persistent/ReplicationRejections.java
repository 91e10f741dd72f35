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

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.mledger.ManagedCursor;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.mledger.PositionFactory;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.impl.MessageIdImpl;
import org.apache.pulsar.metadata.api.MetadataStoreException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Source entries the remote cluster rejected before its deduplication check (#26113), written down on the
 * replicator cursor from the moment of the rejection, before the replicator rewinds for it.
 *
 * <p>A remote with deduplication stores the messages that followed a rejected one; its high-water mark for
 * the replicator's producer name then passes the rejected position, and the resend is answered as a
 * duplicate ({@code -1/-1}) although nothing stored it. A duplicate receipt for a recorded position is
 * therefore not a success: the entry is <em>held</em> (not deleted, not sent again, one ERROR line, shown in
 * stats-internal) until an operator releases it. A real receipt clears the record. Because the record is a
 * cursor property, any broker that later owns the topic reads it: a topic move between the rejection and
 * the duplicate receipt no longer turns the receipt into a deletion.
 *
 * <p>Every property write goes through one chain per cursor: upstream writes cursor properties with the
 * version read at call time, so two writes in flight fail all but one. A failed write is retried (100 ms,
 * doubling to 10 s) until it is written or the cursor is closed, also after the replicator stopped: a record
 * given up there is what the next owner would miss. The rewind waits for the record's write, but not
 * forever: after {@link #REWIND_AFTER_FAILED_WRITES} attempts failed on a stale version it goes ahead (the
 * in-memory record still holds the resend's duplicate receipt; the write goes on being retried), because a
 * cursor whose cached metadata version went stale fails every property write until its next ledger switch,
 * which needs the acks that replication would bring; then every rewind waiting behind that write goes ahead
 * too. Any other failure (the metadata store unreachable) is waited out.
 *
 * <p>State is bounded. A send the remote's publish fence refused ({@link ReplicatorPublishFences#FENCED}) must be
 * recorded too: the fence lives in the remote topic owner's memory, and a remote topic that moves stores the
 * client's pending later sends first, so the fenced ones come back as duplicates. A fence refuses every send in
 * flight, so these, and every rejection beyond {@link #MAX_RECORDS} records, are written down as ranges
 * ({@link RejectedRanges}, one property, {@link #RANGES_KEY}); a range write queued and not started yet takes
 * the later ones along. A duplicate receipt inside a range holds the entry as one for a record does.
 */
public class ReplicationRejections {
    /** Cursor property key prefix; the key ends with {@code <ledgerId>:<entryId>}. */
    public static final String PROPERTY_PREFIX = "pulsar.replication.rejected.";
    /** Cursor property of the rejections kept as ranges: {@code <ledgerId>:<entryId>-<ledgerId>:<entryId>,...}. */
    public static final String RANGES_KEY = PROPERTY_PREFIX + "ranges";
    /** Rejections recorded one by one on a cursor; every property write rewrites the cursor's metadata node. */
    public static final int MAX_RECORDS = 100;
    /** A record's reason is cut to this length, so that the node stays bounded too. */
    static final int MAX_REASON_LENGTH = 256;
    /** Value prefix of a held entry; a recorded one not yet answered as a duplicate has the reason alone. */
    public static final String HELD = "held: ";
    static final String UNCONFIRMED_EXCEPTION = "org.apache.pulsar.client.impl.GeoReplicationUnconfirmedException";
    private static final long FIRST_RETRY_MILLIS = 100;
    /** Failed attempts at a record's write after which the rewind no longer waits for it. */
    static final int REWIND_AFTER_FAILED_WRITES = 5;
    private static final long MAX_RETRY_MILLIS = TimeUnit.SECONDS.toMillis(10);

    private final String replicatorId;
    private final ManagedCursor cursor;
    private final ScheduledExecutorService executor;
    // Position -> value as written (or being written). Bounded by the rejections not yet released.
    private final Map<Position, String> records = new ConcurrentHashMap<>();
    // The rejections kept as ranges, as written or being written. Replaced under writeLock.
    private volatile RejectedRanges ranges = RejectedRanges.NONE;
    // Held entries that only the ranges record (position -> value); their own records did not fit.
    private final Map<Position, String> heldInRanges = new ConcurrentHashMap<>();
    // A write of the ranges queued and not started (it writes the ranges as they are when it starts), and the
    // future of the latest one. Guarded by writeLock.
    private CompletableFuture<Void> rangesQueued;
    private CompletableFuture<Void> rangesWritten = CompletableFuture.completedFuture(null);
    // The rewinds waiting for a record's write, by position.
    private final Map<Position, CompletableFuture<Void>> recordWrites = new ConcurrentHashMap<>();
    private final Object writeLock = new Object();
    private CompletableFuture<Void> writes = CompletableFuture.completedFuture(null);

    public ReplicationRejections(String replicatorId, ManagedCursor cursor, ScheduledExecutorService executor) {
        this.replicatorId = replicatorId;
        this.cursor = cursor;
        this.executor = executor;
        loadRecords();
    }

    /**
     * The remote refused the message before its deduplication check, and the connection stays open: the
     * errors upstream's client turns into these exceptions (ChecksumError, NotAllowedError).
     */
    public static boolean isRejectedBeforeDeduplication(Throwable exception) {
        for (Throwable t = exception; t != null; t = t.getCause()) {
            if (t instanceof PulsarClientException.ChecksumException
                    || t instanceof PulsarClientException.NotAllowedException) {
                return true;
            }
        }
        return false;
    }

    /**
     * The replication client reports a duplicate receipt for a position its own in-memory record holds as rejected
     * (matched by class name, so that this jar links with upstream's client).
     */
    public static boolean isUnconfirmed(Throwable exception) {
        for (Throwable t = exception; t != null; t = t.getCause()) {
            if (t.getClass().getName().equals(UNCONFIRMED_EXCEPTION)) {
                return true;
            }
        }
        return false;
    }

    /** A receipt that does not say where the remote stored the message: a duplicate. */
    public static boolean isDuplicateReceipt(MessageId receipt) {
        return !(receipt instanceof MessageIdImpl) || ((MessageIdImpl) receipt).getLedgerId() < 0
                || ((MessageIdImpl) receipt).getEntryId() < 0;
    }

    /**
     * Writes the rejection down. The returned future (never exceptional) completes once the record is durable,
     * or after {@link #REWIND_AFTER_FAILED_WRITES} attempts failed on a stale version (of it or of a write
     * before it), or when the cursor is closed: the caller rewinds then.
     */
    public CompletableFuture<Void> recordRejection(Position position, String reason) {
        if (isReleased(position)) {
            // A late report for a copy the remote stored meanwhile (the entry is deleted): nothing to hold.
            return CompletableFuture.completedFuture(null);
        }
        String value = bounded(reason == null || reason.isEmpty() ? "rejected" : reason);
        CompletableFuture<Void> rewind = new CompletableFuture<>();
        CompletableFuture<Void> written;
        synchronized (writeLock) {
            CompletableFuture<Void> pending = recordWrites.get(position);
            if (pending != null || records.containsKey(position)) {
                // Already recorded (a rewind resent it and the remote refused it again): wait for the same write.
                return pending != null ? pending : CompletableFuture.completedFuture(null);
            }
            recordWrites.put(position, rewind);
            if (ranges.covers(position)) {
                // Inside a range (another rejection's, or merged): the latest write of the ranges has it.
                written = rangesWritten;
            } else if (isFenced(reason) || records.size() >= MAX_RECORDS) {
                written = addToRangesLocked(position);
            } else {
                written = putRecordLocked(position, value);
            }
        }
        rewind.whenComplete((v, e) -> recordWrites.remove(position, rewind));
        written.whenComplete((v, e) -> rewind.complete(null));
        return rewind;
    }

    // The future completes once the record is durable, or once the rewind no longer waits for it.
    private CompletableFuture<Void> putRecordLocked(Position position, String value) {
        records.put(position, value);
        CompletableFuture<Void> rewindReady = new CompletableFuture<>();
        enqueue(() -> cursor.putCursorProperty(key(position), value), rewindReady)
                .whenComplete((v, e) -> rewindReady.complete(null));
        return rewindReady;
    }

    // The same for the ranges: a write queued and not started yet writes this position too.
    private CompletableFuture<Void> addToRangesLocked(Position position) {
        RejectedRanges before = ranges;
        ranges = before.with(position);
        if (ranges == before) {
            return rangesWritten;
        }
        if (before.isEmpty()) {
            log.warn("[{}] Replication rejections beyond the records kept one by one (sends the remote's publish"
                    + " fence refused, or more than {} rejections) are recorded as ranges ({}); a duplicate receipt"
                    + " inside them holds the entry", replicatorId, MAX_RECORDS, RANGES_KEY);
        }
        return queueRangesWriteLocked();
    }

    private CompletableFuture<Void> queueRangesWriteLocked() {
        if (rangesQueued != null) {
            return rangesQueued;
        }
        CompletableFuture<Void> rewindReady = new CompletableFuture<>();
        rangesQueued = rewindReady;
        rangesWritten = rewindReady;
        enqueue(() -> writeRanges(rewindReady), rewindReady).whenComplete((v, e) -> rewindReady.complete(null));
        return rewindReady;
    }

    // Writes the ranges as they are when the write (or its retry) starts; later changes queue a write of their own.
    private CompletableFuture<Void> writeRanges(CompletableFuture<Void> queued) {
        RejectedRanges current;
        synchronized (writeLock) {
            if (rangesQueued == queued) {
                rangesQueued = null;
            }
            current = ranges;
        }
        return current.isEmpty() ? cursor.removeCursorProperty(RANGES_KEY)
                : cursor.putCursorProperty(RANGES_KEY, current.format());
    }

    // The fence's refusal message starts with FENCED; contains(), as the client may wrap it.
    private static boolean isFenced(String reason) {
        return reason != null && reason.contains(ReplicatorPublishFences.FENCED);
    }

    private static String bounded(String value) {
        return value.length() <= MAX_REASON_LENGTH ? value : value.substring(0, MAX_REASON_LENGTH);
    }

    /** Recorded one by one, or inside the ranges. */
    public boolean isRecorded(Position position) {
        return records.containsKey(position) || ranges.covers(position);
    }

    public boolean isHeld(Position position) {
        String value = records.get(position);
        return (value != null && value.startsWith(HELD)) || heldInRanges.containsKey(position);
    }

    /**
     * A duplicate receipt for a recorded position (or the replication client's unconfirmed report): the remote does not
     * have the message and will drop it from this producer again. It stays on the source until released.
     */
    public void hold(Position position, String reason) {
        if (isReleased(position)) {
            return;
        }
        String value = bounded(HELD + (reason == null ? "a duplicate receipt for a rejected message" : reason));
        synchronized (writeLock) {
            if (isHeld(position)) {
                return;
            }
            if (records.containsKey(position) || records.size() < MAX_RECORDS) {
                // Its own record, also inside the ranges: stats-internal shows it, a new owner skips it.
                putRecordLocked(position, value);
            } else {
                heldInRanges.put(position, value);
                addToRangesLocked(position);
            }
        }
        log.error("[{}] Replication gap held at {}: the remote cluster rejected this message, then answered its"
                + " resend as a duplicate; it stays in the replication backlog and is not sent again. Check on the"
                + " remote first (a stored copy whose receipt was lost also answers as a duplicate), copy it there"
                + " if missing, then release it: pulsar-admin topics skip <topic> -s <replicator subscription>"
                + " -n 1 (docs/geo-replication.md, 'Releasing a held entry')", replicatorId, position);
    }

    /** A real receipt: the remote stored the message. */
    public void confirmed(Position position) {
        // The ranges keep covering it: the entry is deleted now and not sent again.
        heldInRanges.remove(position);
        synchronized (writeLock) {
            if (records.remove(position) != null) {
                enqueue(() -> cursor.removeCursorProperty(key(position)), null);
            }
        }
    }

    /** Records the operator released by skipping the entry (or that a later ack covered) are dropped. */
    public void dropReleased() {
        for (Position position : records.keySet()) {
            if (isReleased(position)) {
                confirmed(position);
            }
        }
        heldInRanges.keySet().removeIf(this::isReleased);
        synchronized (writeLock) {
            RejectedRanges kept = ranges.withoutPassed(cursor.getMarkDeletedPosition());
            if (kept != ranges) {
                ranges = kept;
                queueRangesWriteLocked();
            }
        }
    }

    /** The entries recorded one by one, and the held ones only the ranges record. */
    public int recordedCount() {
        return records.size() + heldInRanges.size();
    }

    public long heldCount() {
        return records.values().stream().filter(v -> v.startsWith(HELD)).count() + heldInRanges.size();
    }

    /** The ranges of rejections recorded together; 0 while every rejection has its own record. */
    public int rangeCount() {
        return ranges.size();
    }

    static String key(Position position) {
        return PROPERTY_PREFIX + position.getLedgerId() + ":" + position.getEntryId();
    }

    /** The position a property key names, or null for any other key. */
    public static Position positionOf(String key) {
        if (!key.startsWith(PROPERTY_PREFIX)) {
            return null;
        }
        String[] parts = key.substring(PROPERTY_PREFIX.length()).split(":");
        try {
            return parts.length == 2 ? PositionFactory.create(Long.parseLong(parts[0]), Long.parseLong(parts[1]))
                    : null;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** No record yet, or nothing to release: the cheap check the replicator makes on every stats update. */
    public boolean isEmpty() {
        return records.isEmpty() && ranges.isEmpty() && heldInRanges.isEmpty();
    }

    private boolean isReleased(Position position) {
        Position markDelete = cursor.getMarkDeletedPosition();
        return (markDelete != null && position.compareTo(markDelete) <= 0) || cursor.isMessageDeleted(position);
    }

    private void loadRecords() {
        Map<String, String> properties = cursor.getCursorProperties();
        if (properties == null) {
            return;
        }
        properties.forEach((key, value) -> {
            if (RANGES_KEY.equals(key)) {
                int[] unreadable = {0};
                RejectedRanges loaded = RejectedRanges.parse(value, unreadable);
                RejectedRanges kept = loaded.withoutPassed(cursor.getMarkDeletedPosition());
                synchronized (writeLock) {
                    ranges = kept;
                    if (unreadable[0] > 0) {
                        // Left as it is: it may be all that records a rejection (a later version's format after
                        // a rollback). Rewritten only when the readable ranges change.
                        log.error("[{}] {} part(s) of the cursor property {}={} are unreadable: the entries they"
                                + " name are not held", replicatorId, unreadable[0], key, value);
                    } else if (kept != loaded || !kept.format().equals(value)) {
                        // Partly acknowledged since it was written: written again as it is now.
                        queueRangesWriteLocked();
                    }
                }
                return;
            }
            Position position = positionOf(key);
            if (position == null) {
                return;
            }
            if (isReleased(position)) {
                enqueue(() -> cursor.removeCursorProperty(key), null);
            } else {
                records.put(position, value);
            }
        });
        if (!records.isEmpty() || !ranges.isEmpty()) {
            log.warn("[{}] Replication rejections recorded by an earlier owner: {}{}", replicatorId, records,
                    ranges.isEmpty() ? "" : ", and the ranges " + ranges.format());
        }
    }

    private interface Write {
        CompletableFuture<Void> start();
    }

    // One write at a time, each retried until done: the next starts after it. impatient, if given, is
    // completed after REWIND_AFTER_FAILED_WRITES failed attempts.
    private CompletableFuture<Void> enqueue(Write write, CompletableFuture<Void> impatient) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        synchronized (writeLock) {
            writes = writes.handle((v, e) -> null).thenCompose(v -> {
                attempt(write, done, impatient, 1, FIRST_RETRY_MILLIS);
                return done.handle((x, e) -> null);
            });
        }
        return done;
    }

    private void attempt(Write write, CompletableFuture<Void> done, CompletableFuture<Void> impatient, int attempt,
                         long retryMillis) {
        if (cursor.isClosed()) {
            done.completeExceptionally(new IllegalStateException(replicatorId + ": the cursor is closed"));
            return;
        }
        CompletableFuture<Void> started;
        try {
            started = write.start();
        } catch (Throwable t) {
            started = CompletableFuture.failedFuture(t);
        }
        started.whenComplete((v, e) -> {
            if (e == null) {
                done.complete(null);
                return;
            }
            log.warn("[{}] Writing a replication rejection record failed (attempt {}), retrying in {} ms: {}",
                    replicatorId, attempt, retryMillis, e.toString());
            if (attempt >= REWIND_AFTER_FAILED_WRITES && isStaleVersion(e)) {
                // Every write queued behind this one is stuck as long as it is: their rewinds go ahead too.
                if (impatient != null) {
                    impatient.complete(null);
                }
                recordWrites.values().forEach(rewind -> rewind.complete(null));
            }
            try {
                executor.schedule(() -> attempt(write, done, impatient, attempt + 1,
                        Math.min(retryMillis * 2, MAX_RETRY_MILLIS)), retryMillis, TimeUnit.MILLISECONDS);
            } catch (RuntimeException rejected) {
                // The broker's executor is shutting down.
                done.completeExceptionally(rejected);
            }
        });
    }

    // The cursor's cached metadata version is stale (ManagedLedgerException.BadVersionException, or the metadata
    // store's own): only a cursor-ledger switch, which needs the acks replication brings, repairs it. Any other
    // failure (the store unreachable) is waited out: the rewind goes ahead only with the record durable.
    private static boolean isStaleVersion(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof ManagedLedgerException.BadVersionException
                    || t instanceof MetadataStoreException.BadVersionException) {
                return true;
            }
        }
        return false;
    }

    private static final Logger log = LoggerFactory.getLogger(ReplicationRejections.class);
}
