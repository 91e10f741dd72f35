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

/**
 * Source positions a remote cluster rejected before its deduplication check (#26113). The remote keeps one
 * high-water mark per replication producer: once later messages are stored, a resend of a rejected one is
 * dropped as a duplicate and answered {@code -1/-1}, which for these positions is not a confirmation.
 *
 * <p>Not thread-safe: the producer guards it with its own monitor.
 */
final class RejectedSourcePositions {
    private record SourcePosition(long ledgerId, long entryId) {
    }

    // The replicator resends a gap it was told is unconfirmed, and the remote drops it again: the first
    // report is immediate, each next one for the same position waits twice as long, up to a minute.
    static final long FIRST_RETRY_DELAY_MILLIS = 100;
    static final long MAX_RETRY_DELAY_MILLIS = 60_000;

    private final Set<SourcePosition> positions = new HashSet<>();
    private final Map<SourcePosition, Long> reportDelays = new HashMap<>();

    void add(long ledgerId, long entryId) {
        positions.add(new SourcePosition(ledgerId, entryId));
    }

    boolean contains(long ledgerId, long entryId) {
        return !positions.isEmpty() && positions.contains(new SourcePosition(ledgerId, entryId));
    }

    /** A receipt with a real target position: the remote stored it after all. */
    void confirmed(long ledgerId, long entryId) {
        if (!positions.isEmpty()) {
            SourcePosition position = new SourcePosition(ledgerId, entryId);
            positions.remove(position);
            reportDelays.remove(position);
        }
    }

    /** How long to wait before reporting this position unconfirmed once more: 0 the first time. */
    long nextReportDelayMillis(long ledgerId, long entryId) {
        Long previous = reportDelays.get(new SourcePosition(ledgerId, entryId));
        long delay = previous == null ? 0
                : previous == 0 ? FIRST_RETRY_DELAY_MILLIS : Math.min(previous * 2, MAX_RETRY_DELAY_MILLIS);
        reportDelays.put(new SourcePosition(ledgerId, entryId), delay);
        return delay;
    }

    int size() {
        return positions.size();
    }
}
