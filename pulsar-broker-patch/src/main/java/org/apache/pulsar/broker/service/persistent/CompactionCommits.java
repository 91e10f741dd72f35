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

import java.util.concurrent.CompletableFuture;
import org.apache.bookkeeper.mledger.Position;
import org.apache.pulsar.compaction.CompactedTopic;
import org.apache.pulsar.compaction.CompactedTopicContext;
import org.apache.pulsar.compaction.CompactedTopicImpl;

/**
 * The compacted views the compaction subscription commits (#26486). A new compacted ledger and horizon are
 * served before the compaction cursor's mark-delete records them, so that readers do not skip data while the
 * cursor moves (#12522); when that mark-delete fails, the view the durable state names is served again. Its
 * original data is still there: the managed ledger trims only below a mark-delete position that is durable.
 *
 * <p>Every change of the view and of what is durable is made under the {@link CompactedTopicImpl}'s monitor,
 * the lock that class documents for reading its horizon and context together.
 */
final class CompactionCommits {

    /** One compacted view installed for a mark-delete of the compaction cursor. */
    static final class Commit {
        final Position horizon;
        final long ledgerId;
        // What the view changed to, and what newCompactedLedger returned (the previous context, once open).
        final CompletableFuture<CompactedTopicContext> context;
        final CompletableFuture<CompactedTopicContext> previous;

        Commit(Position horizon, long ledgerId, CompletableFuture<CompactedTopicContext> context,
               CompletableFuture<CompactedTopicContext> previous) {
            this.horizon = horizon;
            this.ledgerId = ledgerId;
            this.context = context;
            this.previous = previous;
        }
    }

    private final CompactedTopic compactedTopic;
    // Null for another CompactedTopic implementation: it is installed as upstream does, never put back.
    private final CompactedTopicImpl view;
    // The view the compaction cursor's durable state names (null: none). Guarded by view's monitor.
    private Position durableHorizon;
    private CompletableFuture<CompactedTopicContext> durableContext;

    /** Takes the view served now, installed from the cursor's recovered state, as the durable one. */
    CompactionCommits(CompactedTopic compactedTopic) {
        this.compactedTopic = compactedTopic;
        this.view = compactedTopic instanceof CompactedTopicImpl ? (CompactedTopicImpl) compactedTopic : null;
        if (view != null) {
            synchronized (view) {
                durableHorizon = view.getCompactionHorizon().orElse(null);
                durableContext = view.getCompactedTopicContextFuture();
            }
        }
    }

    /** Serves the compacted ledger {@code ledgerId} up to {@code horizon}, before its mark-delete is issued. */
    Commit install(Position horizon, long ledgerId) {
        if (view == null) {
            return new Commit(horizon, ledgerId, null, compactedTopic.newCompactedLedger(horizon, ledgerId));
        }
        synchronized (view) {
            CompletableFuture<CompactedTopicContext> previous = view.newCompactedLedger(horizon, ledgerId);
            return new Commit(horizon, ledgerId, view.getCompactedTopicContextFuture(), previous);
        }
    }

    /**
     * The commit's mark-delete is durable: the durable state names its view. On 4.x the compactor does not wait
     * for its commit's outcome, so commits can be in flight together, and their mark-deletes are issued in the
     * order their ledgers open: when a later commit failed first and put back the durable view this one now
     * replaces, this one's view is served again, because the subscription deletes the ledger this commit replaced
     * next, which may be the one put back. The served view is the durable one only through a put-back or this
     * method (an install replaces it at once), so the identity check finds exactly that case. Not when no compacted
     * view was durable: a null view is also what a cleaned compaction subscription serves.
     */
    void recorded(Commit commit) {
        if (view == null) {
            return;
        }
        synchronized (view) {
            if (durableHorizon == null || commit.horizon.compareTo(durableHorizon) >= 0) {
                CompletableFuture<CompactedTopicContext> replaced = durableContext;
                durableHorizon = commit.horizon;
                durableContext = commit.context;
                if (replaced != null && view.getCompactedTopicContextFuture() == replaced) {
                    view.restoreCompactedLedger(replaced, commit.horizon, commit.context);
                }
            }
        }
    }

    /**
     * The commit's mark-delete failed: serves the durable view again, unless a newer commit replaced this one
     * (its own outcome decides). True when the view was put back.
     */
    boolean notRecorded(Commit commit) {
        if (view == null) {
            return false;
        }
        synchronized (view) {
            return view.restoreCompactedLedger(commit.context, durableHorizon, durableContext);
        }
    }
}
