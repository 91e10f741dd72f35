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
import org.apache.bookkeeper.mledger.AsyncCallbacks.MarkDeleteCallback;
import org.apache.bookkeeper.mledger.ManagedCursor;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.Position;

/**
 * A mark-delete for a caller that needs its state applied to the cursor, not durable (#26484): the future
 * completes when the rate limiter accepts it (applied in memory, written within one limiter period) or when
 * it is durable, whichever comes first, and fails only if it was neither. A write that fails after the
 * mark-delete was accepted leaves the cursor dirty, and a later write persists the state.
 */
final class AppliedMarkDelete implements MarkDeleteCallback {
    private final CompletableFuture<Void> applied = new CompletableFuture<>();

    private AppliedMarkDelete() {
    }

    static CompletableFuture<Void> markDelete(ManagedCursor cursor, Position position,
                                              Map<String, Long> properties) {
        AppliedMarkDelete callback = new AppliedMarkDelete();
        cursor.asyncMarkDelete(position, properties, callback, null);
        return callback.applied;
    }

    @Override
    public void markDeleteAccepted(Object ctx) {
        applied.complete(null);
    }

    @Override
    public void markDeleteComplete(Object ctx) {
        applied.complete(null);
    }

    @Override
    public void markDeleteFailed(ManagedLedgerException exception, Object ctx) {
        applied.completeExceptionally(exception);
    }
}
