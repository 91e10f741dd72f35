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

import java.util.HashSet;
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

    private final Set<SourcePosition> positions = new HashSet<>();
    // Rejected positions already reported unconfirmed: the replicator retries a gap, one warning is enough.
    private final Set<SourcePosition> reported = new HashSet<>();

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
            reported.remove(position);
        }
    }

    /** True the first time a rejected position is reported unconfirmed. */
    boolean firstReport(long ledgerId, long entryId) {
        return reported.add(new SourcePosition(ledgerId, entryId));
    }

    int size() {
        return positions.size();
    }
}
