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
package org.apache.pulsar.client.impl;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;

/**
 * Source positions a remote cluster rejected before its deduplication check (#26113). The remote keeps one
 * high-water mark per replication producer: once later messages are stored, a resend of a rejected one is
 * dropped as a duplicate and answered {@code -1/-1}, which for these positions is not a confirmation.
 *
 * <p>One record per client, topic and producer name, shared by the producers the replicator creates one
 * after another on that client (a producer is re-created after a disconnect, while the source entries it
 * saw rejected are still to be resent). A new client, as after a broker restart, starts empty. A record
 * that holds no rejection is dropped when its producer closes.
 */
final class RejectedSourcePositions {
    // A value class rather than a record: 4.0.8's pulsar-client-original is built for Java 8.
    private static final class SourcePosition {
        private final long ledgerId;
        private final long entryId;

        SourcePosition(long ledgerId, long entryId) {
            this.ledgerId = ledgerId;
            this.entryId = entryId;
        }

        @Override
        public boolean equals(Object o) {
            if (this == o) {
                return true;
            }
            if (!(o instanceof SourcePosition)) {
                return false;
            }
            SourcePosition other = (SourcePosition) o;
            return ledgerId == other.ledgerId && entryId == other.entryId;
        }

        @Override
        public int hashCode() {
            return 31 * Long.hashCode(ledgerId) + Long.hashCode(entryId);
        }

        @Override
        public String toString() {
            return "SourcePosition[ledgerId=" + ledgerId + ", entryId=" + entryId + "]";
        }
    }

    // The replicator resends a gap it was told is unconfirmed, and the remote drops it again: the first
    // report is immediate, each next one for the same position waits twice as long, up to a minute.
    static final long FIRST_RETRY_DELAY_MILLIS = 100;
    static final long MAX_RETRY_DELAY_MILLIS = 60_000;

    // Weak keys: a closed client's records go with it.
    private static final Map<PulsarClientImpl, Map<String, RejectedSourcePositions>> SHARED = new WeakHashMap<>();

    private final Set<SourcePosition> positions = new HashSet<>();
    private final Map<SourcePosition, Long> reportDelays = new HashMap<>();

    /** The record of the replication producers named {@code producerName} on {@code topic} of this client. */
    static RejectedSourcePositions shared(PulsarClientImpl client, String topic, String producerName) {
        if (client == null || producerName == null) {
            return new RejectedSourcePositions();
        }
        synchronized (SHARED) {
            return SHARED.computeIfAbsent(client, c -> new HashMap<>())
                    .computeIfAbsent(topic + " " + producerName, name -> new RejectedSourcePositions());
        }
    }

    /**
     * A producer using {@code record} closed: the record is dropped if it holds no rejection, so that the map
     * holds only the topics with a rejection not yet confirmed.
     */
    static void releaseIfEmpty(PulsarClientImpl client, String topic, String producerName,
                               RejectedSourcePositions record) {
        if (client == null || producerName == null) {
            return;
        }
        synchronized (SHARED) {
            Map<String, RejectedSourcePositions> records = SHARED.get(client);
            String key = topic + " " + producerName;
            if (records != null && records.get(key) == record && record.size() == 0) {
                records.remove(key);
                if (records.isEmpty()) {
                    SHARED.remove(client);
                }
            }
        }
    }

    synchronized void add(long ledgerId, long entryId) {
        positions.add(new SourcePosition(ledgerId, entryId));
    }

    synchronized boolean contains(long ledgerId, long entryId) {
        return !positions.isEmpty() && positions.contains(new SourcePosition(ledgerId, entryId));
    }

    /** A receipt with a real target position: the remote stored it after all. */
    synchronized void confirmed(long ledgerId, long entryId) {
        if (!positions.isEmpty()) {
            SourcePosition position = new SourcePosition(ledgerId, entryId);
            positions.remove(position);
            reportDelays.remove(position);
        }
    }

    /** How long to wait before reporting this position unconfirmed once more: 0 the first time. */
    synchronized long nextReportDelayMillis(long ledgerId, long entryId) {
        Long previous = reportDelays.get(new SourcePosition(ledgerId, entryId));
        long delay = previous == null ? 0
                : previous == 0 ? FIRST_RETRY_DELAY_MILLIS : Math.min(previous * 2, MAX_RETRY_DELAY_MILLIS);
        reportDelays.put(new SourcePosition(ledgerId, entryId), delay);
        return delay;
    }

    synchronized int size() {
        return positions.size();
    }
}
