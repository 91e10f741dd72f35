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

import io.netty.buffer.ByteBuf;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.metrics.Meter;
import io.opentelemetry.api.metrics.ObservableLongCounter;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;
import org.apache.bookkeeper.mledger.AsyncCallbacks.DeleteCallback;
import org.apache.bookkeeper.mledger.AsyncCallbacks.ReadEntryCallback;
import org.apache.bookkeeper.mledger.Entry;
import org.apache.bookkeeper.mledger.ManagedCursor;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.mledger.PositionFactory;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.ProducerBuilder;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.impl.MessageImpl;
import org.apache.pulsar.client.impl.OpSendMsgStats;
import org.apache.pulsar.client.impl.ProducerBuilderImpl;
import org.apache.pulsar.client.impl.ProducerImpl;
import org.apache.pulsar.client.impl.SendCallback;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Replication gaps (#26113): a source entry the remote cluster rejected before its deduplication check and
 * then dropped as a duplicate (the replication producer reports it unconfirmed). The replicator's own
 * producer can never store it there again: the remote's high-water mark for that producer name is past it.
 *
 * <p>A gap is first written down, as a property of the replicator cursor, so that a broker restart cannot
 * turn the next duplicate receipt into a deletion. It is then healed: published again by a producer of its
 * own ({@code <replicator producer name>.heal.<ledgerId>:<entryId>}, which no high-water mark covers), and
 * deleted on the source only after that producer's receipt. If that publish fails for any reason other than
 * the connection, the gap is held: the property says so and why, the entry stays in the replication
 * backlog, one ERROR line names it. A held gap is tried again after 10 s, then less and less often (at
 * most every 10 minutes), and when the replicator starts again (topic unload, broker restart); an operator
 * who gives it up skips it with {@code pulsar-admin topics skip}.
 */
public class ReplicationGapHealer {
    /** Cursor property key prefix; the key ends with {@code <ledgerId>:<entryId>}. */
    public static final String GAP_PROPERTY_PREFIX = "pulsar.replication.gap.";
    public static final String GAP_COUNTER = "pulsar.broker.replication.gap.count";
    static final String UNCONFIRMED_EXCEPTION = "org.apache.pulsar.client.impl.GeoReplicationUnconfirmedException";
    static final String HEALING = "healing";
    static final String HELD = "held: ";
    private static final long FIRST_RETRY_MILLIS = 100;
    private static final long MAX_RETRY_MILLIS = TimeUnit.MINUTES.toMillis(1);
    // A held gap waits for someone to remove the cause on the remote: retried seldom, and less and less often.
    private static final long FIRST_HELD_RETRY_MILLIS = TimeUnit.SECONDS.toMillis(10);
    private static final long MAX_HELD_RETRY_MILLIS = TimeUnit.MINUTES.toMillis(10);
    private static final AttributeKey<String> STATE_KEY = AttributeKey.stringKey("pulsar.replication.gap.state");

    /** Turns a source entry into the message the replicator would send for it. */
    public interface MessagePreparer {
        CompletableFuture<MessageImpl<?>> prepare(Position position, ByteBuf headersAndPayload);
    }

    private enum State {
        /** Written down, a heal attempt is running or scheduled. */
        HEALING,
        /** The last attempt was refused; the next one is scheduled (back-off) or comes with a restart. */
        HELD,
        /** Written down, no attempt running: the next read of the entry starts one (after a restart, or when
         *  the source delete of a healed gap failed). */
        TO_RETRY
    }

    private final String replicatorId;
    private final ManagedCursor cursor;
    private final ProducerBuilder<byte[]> producerTemplate;
    private final String producerName;
    private final MessagePreparer preparer;
    private final ScheduledExecutorService executor;
    private final BooleanSupplier stopped;
    private final Map<Position, State> gaps = new ConcurrentHashMap<>();
    private final LongAdder healed = new LongAdder();
    private final LongAdder held = new LongAdder();
    // Gaps held in this run: counted once each, however often a retry fails.
    private final Set<Position> countedHeld = ConcurrentHashMap.newKeySet();
    private final Map<Position, Long> heldRetryMillis = new ConcurrentHashMap<>();
    private final ObservableLongCounter counter;

    public ReplicationGapHealer(String replicatorId, ManagedCursor cursor, ProducerBuilder<byte[]> producerTemplate,
                                String producerName, MessagePreparer preparer, ScheduledExecutorService executor,
                                BooleanSupplier stopped, Meter meter, Attributes attributes) {
        this.replicatorId = replicatorId;
        this.cursor = cursor;
        this.producerTemplate = producerTemplate;
        this.producerName = producerName;
        this.preparer = preparer;
        this.executor = executor;
        this.stopped = stopped;
        loadWrittenGaps();
        Attributes healedAttributes = attributes.toBuilder().put(STATE_KEY, "healed").build();
        Attributes heldAttributes = attributes.toBuilder().put(STATE_KEY, "held").build();
        this.counter = meter.counterBuilder(GAP_COUNTER)
                .setUnit("{gap}")
                .setDescription("The number of replication gaps (messages the remote cluster rejected and then"
                        + " dropped as duplicates) healed by publishing them again, or held on the source.")
                .buildWithCallback(m -> {
                    m.record(healed.sum(), healedAttributes);
                    m.record(held.sum(), heldAttributes);
                });
    }

    /** The replication producer reported this send unconfirmed: the remote does not have the message. */
    public static boolean isUnconfirmed(Throwable exception) {
        for (Throwable t = exception; t != null; t = t.getCause()) {
            if (t.getClass().getName().equals(UNCONFIRMED_EXCEPTION)) {
                return true;
            }
        }
        return false;
    }

    /** Whether the replicator must leave this entry to the healer instead of sending it. */
    public boolean isGap(Position position) {
        return gaps.containsKey(position);
    }

    /**
     * Takes over a gap: the entry the replication producer reported unconfirmed, or a known gap read
     * again. Each attempt reads the entry again: the replicator's buffer is its own to release.
     */
    public void takeOver(Position position) {
        State previous = gaps.putIfAbsent(position, State.HEALING);
        if (previous == null) {
            log.warn("[{}] The remote cluster rejected source entry {} and then dropped it as a duplicate: publishing"
                    + " it again under its own producer name (it arrives after later messages)", replicatorId,
                    position);
            cursor.putCursorProperty(propertyKey(position), HEALING).whenComplete((v, e) -> {
                if (e != null) {
                    log.warn("[{}] Could not write gap {} down on the replicator cursor; healing it anyway",
                            replicatorId, position, e);
                }
                attempt(position, FIRST_RETRY_MILLIS);
            });
        } else if (previous == State.TO_RETRY && gaps.replace(position, State.TO_RETRY, State.HEALING)) {
            attempt(position, FIRST_RETRY_MILLIS);
        }
    }

    public long getHealedCount() {
        return healed.sum();
    }

    public long getHeldCount() {
        return held.sum();
    }

    public void close() {
        counter.close();
    }

    private void attempt(Position position, long retryMillis) {
        if (stopped.getAsBoolean()) {
            // The replicator stopped: the cursor property brings the gap back when it starts again.
            gaps.replace(position, State.HEALING, State.TO_RETRY);
            return;
        }
        publishOnce(position).whenComplete((messageId, e) -> {
            if (e == null) {
                deleteHealed(position);
            } else if (isConnectionProblem(e)) {
                long next = Math.min(retryMillis * 2, MAX_RETRY_MILLIS);
                log.warn("[{}] Healing gap {} failed ({}), retrying in {} ms", replicatorId, position, e.getMessage(),
                        retryMillis);
                executor.schedule(() -> attempt(position, next), retryMillis, TimeUnit.MILLISECONDS);
            } else {
                hold(position, e);
            }
        });
    }

    private CompletableFuture<MessageId> publishOnce(Position position) {
        ProducerBuilder<byte[]> builder = producerTemplate.clone()
                .producerName(producerName + ".heal." + position.getLedgerId() + ":" + position.getEntryId());
        ((ProducerBuilderImpl<byte[]>) builder).getConf().setReplProducer(true);
        ((ProducerBuilderImpl<byte[]>) builder).getConf().setNonPartitionedTopicExpected(true);
        return builder.createAsync().thenCompose(producer -> readEntry(position)
                .thenCompose(entry -> preparer.prepare(position, entry.getDataBuffer())
                        .thenCompose(msg -> send((ProducerImpl<byte[]>) producer, msg))
                        .whenComplete((id, e) -> entry.release()))
                .whenComplete((id, e) -> producer.closeAsync()));
    }

    private CompletableFuture<Entry> readEntry(Position position) {
        CompletableFuture<Entry> read = new CompletableFuture<>();
        cursor.getManagedLedger().asyncReadEntry(position, new ReadEntryCallback() {
            @Override
            public void readEntryComplete(Entry entry, Object ctx) {
                read.complete(entry);
            }

            @Override
            public void readEntryFailed(ManagedLedgerException exception, Object ctx) {
                read.completeExceptionally(exception);
            }
        }, null);
        return read;
    }

    private static CompletableFuture<MessageId> send(ProducerImpl<byte[]> producer, MessageImpl<?> msg) {
        HealSend callback = new HealSend(msg);
        producer.sendAsync(msg, callback);
        return callback.future;
    }

    private void deleteHealed(Position position) {
        cursor.asyncDelete(position, new DeleteCallback() {
            @Override
            public void deleteComplete(Object ctx) {
                cursor.removeCursorProperty(propertyKey(position));
                gaps.remove(position);
                heldRetryMillis.remove(position);
                healed.increment();
                log.info("[{}] Healed gap {}: the remote cluster stored it, deleted on the source", replicatorId,
                        position);
            }

            @Override
            public void deleteFailed(ManagedLedgerException exception, Object ctx) {
                // The remote has it, the property stays: the next read of the entry (or the next start) heals
                // it again under the same name, which the remote answers as a duplicate of what it stored,
                // and the delete is tried again.
                log.warn("[{}] Healed gap {} but could not delete it on the source", replicatorId, position,
                        exception);
                gaps.put(position, State.TO_RETRY);
            }
        }, null);
    }

    private void hold(Position position, Throwable cause) {
        String reason = HELD + Optional.ofNullable(cause.getMessage()).orElse(cause.getClass().getSimpleName());
        boolean heldBefore = cursor.getCursorProperties().getOrDefault(propertyKey(position), "").startsWith(HELD);
        gaps.put(position, State.HELD);
        if (countedHeld.add(position)) {
            held.increment();
        }
        cursor.putCursorProperty(propertyKey(position), reason);
        long retryMillis = heldRetryMillis.merge(position, FIRST_HELD_RETRY_MILLIS,
                (previous, first) -> Math.min(previous * 2, MAX_HELD_RETRY_MILLIS));
        if (heldBefore) {
            log.warn("[{}] Replication gap {} is still held, next try in {} s: {}", replicatorId, position,
                    retryMillis / 1000, reason);
        } else {
            log.error("[{}] Replication gap {} is held: the remote cluster does not have this message and refused it"
                    + " again ({}). It stays in the replication backlog and is tried again in {} s, then less and"
                    + " less often (at most every {} min), and whenever the topic is loaded. To give it up:"
                    + " pulsar-admin topics skip <topic> -s {} -n 1", replicatorId, position, reason,
                    retryMillis / 1000, TimeUnit.MILLISECONDS.toMinutes(MAX_HELD_RETRY_MILLIS), cursor.getName());
        }
        executor.schedule(() -> {
            if (gaps.replace(position, State.HELD, State.HEALING)) {
                attempt(position, FIRST_RETRY_MILLIS);
            }
        }, retryMillis, TimeUnit.MILLISECONDS);
    }

    /** Gaps written down by an earlier run of this replicator; a property of an entry since deleted is stale. */
    private void loadWrittenGaps() {
        for (Map.Entry<String, String> property : cursor.getCursorProperties().entrySet()) {
            if (!property.getKey().startsWith(GAP_PROPERTY_PREFIX)) {
                continue;
            }
            Position position = parsePosition(property.getKey().substring(GAP_PROPERTY_PREFIX.length()));
            if (position == null || cursor.isMessageDeleted(position)) {
                cursor.removeCursorProperty(property.getKey());
            } else {
                gaps.put(position, State.TO_RETRY);
            }
        }
    }

    static String propertyKey(Position position) {
        return GAP_PROPERTY_PREFIX + position.getLedgerId() + ":" + position.getEntryId();
    }

    private static Position parsePosition(String text) {
        String[] parts = text.split(":");
        try {
            return parts.length == 2 ? PositionFactory.create(Long.parseLong(parts[0]), Long.parseLong(parts[1]))
                    : null;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static boolean isConnectionProblem(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof PulsarClientException.TimeoutException
                    || t instanceof PulsarClientException.ConnectException
                    || t instanceof PulsarClientException.LookupException
                    || t instanceof PulsarClientException.AlreadyClosedException) {
                return true;
            }
        }
        return false;
    }

    private static final class HealSend implements SendCallback {
        private final MessageImpl<?> msg;
        private final CompletableFuture<MessageId> future = new CompletableFuture<>();

        private HealSend(MessageImpl<?> msg) {
            this.msg = msg;
        }

        @Override
        public void sendComplete(Throwable e, OpSendMsgStats opSendMsgStats) {
            MessageId id = msg.getMessageId();
            msg.recycle();
            if (e == null) {
                future.complete(id);
            } else {
                future.completeExceptionally(e);
            }
        }

        @Override
        public void addCallback(MessageImpl<?> msg, SendCallback scb) {
            // Not batched.
        }

        @Override
        public SendCallback getNextSendCallback() {
            return null;
        }

        @Override
        public MessageImpl<?> getNextMessage() {
            return null;
        }

        @Override
        public CompletableFuture<MessageId> getFuture() {
            return future;
        }
    }

    private static final Logger log = LoggerFactory.getLogger(ReplicationGapHealer.class);
}
