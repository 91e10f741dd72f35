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
import io.netty.buffer.ByteBuf;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.pulsar.common.api.proto.KeyValue;
import org.apache.pulsar.common.api.proto.MessageMetadata;
import org.apache.pulsar.common.protocol.Commands;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The remote side of #26113: a replicator producer whose message this topic refused before its deduplication
 * check is fenced at the refused source position, so that its deduplication high-water mark never passes a
 * position this topic did not store.
 *
 * <p>Without the fence, the messages that follow a refused one (in flight, or resent first after a reconnect)
 * are stored, the high-water mark for the producer name passes the refused position, and its resend is
 * answered as a duplicate although nothing stored it: the source deletes a message the remote never had.
 * With the fence, every later message of that producer name with a higher source position is refused too
 * ({@code NotAllowedError}: the replicator fails the send and rewinds), until the refused position itself
 * arrives again; then it lifts. The replicator resends from its mark-delete position, in source order, so a
 * transient refusal heals in order and a deterministic one stalls visibly instead of leaving a gap.
 *
 * <p>A message refused for a bad checksum may carry a garbled source position. Such a fence does not use it.
 * It trusts the high-water mark H at the refusal (anything at or below it is a duplicate, left to
 * deduplication) and what it refused since. No message between H and the refused one can still come
 * unaccepted (it was sent, and arrived, before it), and every message that arrives after it and is above it
 * was sent after it or resent in order. So the entry right after H in H's ledger can only be the refused
 * one; and, while only one message was refused unread, so can a position strictly below the lowest one
 * refused since. After a second checksum refusal only the first rule holds (the two unknown positions may
 * differ). Anything else above H is refused. (Not the send's sequence id: a replicator sends each message
 * with its original producer's sequence id, and several source producers interleave.) Where neither rule
 * can apply (the refused entry starts a new source ledger and nothing bounds it) the fence stalls, visibly,
 * until an operator unloads the remote topic.
 *
 * <p>A fence lifts only by position: a new producer session starts again from the source's mark-delete
 * position, below the refused entry, so it lifts the fence the same way. What never lifts it: a connection
 * drop or a producer close (the client resends its pending sends first, and a producer that timed out its
 * creation closes and reconnects with them); an entry the source skipped, or that expired there, leaves the
 * fence up, visibly stalled, until an operator unloads the remote topic. The state is per topic owner, in
 * memory, one entry per fenced producer name: a topic moving on the remote loses it, which the source's
 * durable record of the rejection covers ({@link ReplicationRejections}).
 */
public class ReplicatorPublishFences {
    /** Start of the refusal message a fenced send gets. */
    public static final String FENCED = "Fenced behind a refused replicated message: ";
    /**
     * Broker configuration key (a {@code broker.conf} line, read from the configuration's properties):
     * {@code false} turns the fence off: a refused message's successors are stored as without it.
     */
    public static final String ENABLED_PROPERTY = "replicatorPublishFenceEnabled";

    private final Supplier<String> topic;
    private final Function<String, long[]> highWaterMark;
    // By producer name; guarded by this: a producer reconnecting publishes from another connection thread.
    private final Map<String, Fence> fences = new HashMap<>();
    // What was last logged per producer name (a stall refences at the same position on every resend: one WARN).
    private final Map<String, String> lastWarned = new HashMap<>();
    private volatile boolean empty = true;

    /**
     * @param highWaterMark the highest source position deduplication has taken for a producer name, or null
     */
    public ReplicatorPublishFences(Supplier<String> topic, Function<String, long[]> highWaterMark) {
        this.topic = topic;
        this.highWaterMark = highWaterMark;
    }

    private static final class Fence {
        final String cause;
        final long[] highWater;
        // The refused position if it could be trusted, else null.
        long[] refused;
        // Messages refused whose position could not be read (checksum), while no trusted one bounds them.
        int unreadRefusals;
        // The lowest position refused since the fence went up.
        long[] lowestRefusedSince;
        long refusedSends;

        Fence(String cause, long[] highWater, long[] refused) {
            this.cause = cause;
            this.highWater = highWater;
            this.refused = refused;
            this.unreadRefusals = refused == null ? 1 : 0;
        }

        boolean isTheRefusedOne(long[] position) {
            if (refused != null) {
                return compare(position, refused) <= 0;
            }
            if (highWater != null && position[0] == highWater[0] && position[1] == highWater[1] + 1) {
                return true;
            }
            return unreadRefusals == 1 && lowestRefusedSince != null && compare(position, lowestRefusedSince) < 0;
        }

        String describe() {
            return refused != null ? format(refused) : "a message after " + format(highWater);
        }
    }

    /** Whether the broker configuration's properties leave the fence on (the default). */
    public static boolean isEnabled(Properties properties) {
        return properties == null || !"false".equalsIgnoreCase(properties.getProperty(ENABLED_PROPERTY, "").trim());
    }

    /** Deduplication was turned off: a fence left from before would refuse what it no longer protects. */
    public synchronized void clear() {
        fences.clear();
        lastWarned.clear();
        empty = true;
    }

    public boolean isEmpty() {
        return empty;
    }

    /** The number of producer names fenced now. */
    public synchronized int size() {
        return fences.size();
    }

    /**
     * Decides on a replicated message of a producer with source-position deduplication, before any check that
     * may refuse it.
     *
     * @return null if it may go on, else why it is refused
     */
    public String refusal(String producerName, ByteBuf headersAndPayload) {
        if (empty) {
            return null;
        }
        synchronized (this) {
            Fence fence = fences.get(producerName);
            if (fence == null) {
                return null;
            }
            long[] position = sourcePosition(headersAndPayload, false);
            if (position == null) {
                // Deduplication cannot place it either (it answers such a message as unknown).
                return null;
            }
            if (fence.highWater != null && compare(position, fence.highWater) <= 0) {
                return null;
            }
            if (fence.isTheRefusedOne(position)) {
                remove(producerName);
                // Debug only: a message refused for good lifts and re-raises the fence on every resend.
                if (log.isDebugEnabled()) {
                    log.debug("[{}] Replicator producer {} sent {} again after {} fenced sends: fence lifted",
                            topic.get(), producerName, format(position), fence.refusedSends);
                }
                return null;
            }
            if (fence.lowestRefusedSince == null || compare(position, fence.lowestRefusedSince) < 0) {
                fence.lowestRefusedSince = position;
            }
            fence.refusedSends++;
            return FENCED + fence.describe() + " was refused (" + fence.cause + "); the later " + format(position)
                    + " is refused until it is stored";
        }
    }

    /** A message of this producer was refused before deduplication; its source position can be trusted. */
    public void refused(String producerName, ByteBuf headersAndPayload, String cause) {
        long[] position = sourcePosition(headersAndPayload, true);
        if (position != null) {
            fence(producerName, position, cause);
        }
    }

    /** The same, for a message whose content (its source position too) cannot be trusted. */
    public void refusedUntrusted(String producerName, String cause) {
        fence(producerName, null, cause);
    }

    private void fence(String producerName, long[] position, String cause) {
        long[] highWater = highWaterMark.apply(producerName);
        if (position != null && highWater != null && compare(position, highWater) <= 0) {
            // Deduplication would have answered it as a duplicate: nothing after it can open a gap.
            return;
        }
        synchronized (this) {
            Fence existing = fences.get(producerName);
            if (existing != null) {
                // Refused again while fenced: the same message sent again, or one the fence let through.
                if (position == null) {
                    if (existing.refused == null) {
                        // Another unknown position: the lowest refused since no longer tells which one is next.
                        existing.unreadRefusals++;
                    }
                } else if (existing.refused == null) {
                    // Refused by the producer before the fence saw it: it bounds the unknown one as any other.
                    if (existing.lowestRefusedSince == null || compare(position, existing.lowestRefusedSince) < 0) {
                        existing.lowestRefusedSince = position;
                    }
                } else if (compare(position, existing.refused) < 0) {
                    existing.refused = position;
                }
                return;
            }
            Fence fence = new Fence(cause, highWater, position);
            fences.put(producerName, fence);
            empty = false;
            String what = fence.describe() + " (" + cause + ")";
            if (what.equals(lastWarned.put(producerName, what))) {
                if (log.isDebugEnabled()) {
                    log.debug("[{}] Replicator producer {}: {} refused again", topic.get(), producerName, what);
                }
                return;
            }
        }
        log.warn("[{}] Replicator producer {}: {} refused ({}); its later messages are refused until it is stored,"
                        + " so that deduplication does not pass it", topic.get(), producerName,
                position == null ? "a message after " + format(highWater) : format(position), cause);
    }

    private Fence remove(String producerName) {
        Fence fence = fences.remove(producerName);
        empty = fences.isEmpty();
        return fence;
    }

    /**
     * The source position a replicator put on the message, or null (also for a replicated marker when
     * {@code notForMarkers}: a marker refused again and again must not stall what follows it).
     */
    static long[] sourcePosition(ByteBuf headersAndPayload, boolean notForMarkers) {
        int readerIndex = headersAndPayload.readerIndex();
        MessageMetadata md;
        try {
            md = Commands.parseMessageMetadata(headersAndPayload);
        } catch (RuntimeException e) {
            return null;
        } finally {
            headersAndPayload.readerIndex(readerIndex);
        }
        if (notForMarkers && md.hasMarkerType()) {
            return null;
        }
        for (KeyValue kv : md.getPropertiesList()) {
            if (MSG_PROP_REPL_SOURCE_POSITION.equals(kv.getKey())) {
                return parse(kv.getValue());
            }
        }
        return null;
    }

    static long[] parse(String value) {
        int colon = value.indexOf(':');
        if (colon <= 0) {
            return null;
        }
        try {
            return new long[]{Long.parseLong(value.substring(0, colon)), Long.parseLong(value.substring(colon + 1))};
        } catch (NumberFormatException e) {
            return null;
        }
    }

    static int compare(long[] a, long[] b) {
        int byLedger = Long.compare(a[0], b[0]);
        return byLedger != 0 ? byLedger : Long.compare(a[1], b[1]);
    }

    private static String format(long[] position) {
        return position == null ? "the start" : position[0] + ":" + position[1];
    }

    private static final Logger log = LoggerFactory.getLogger(ReplicatorPublishFences.class);
}
