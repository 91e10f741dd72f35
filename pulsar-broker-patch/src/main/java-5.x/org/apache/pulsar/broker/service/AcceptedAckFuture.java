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
package org.apache.pulsar.broker.service;

import java.util.concurrent.CompletableFuture;

/**
 * The future of an ack that may be accepted before it is durable (a throttled ack, held by the managed
 * cursor until a cursor-ledger write holds it). The future itself completes when the ack is durable, which
 * is what an ack receipt promises; {@link #applied()} completes as soon as the ack is applied to the cursor
 * in memory, which is all the consumer's own bookkeeping (pending acks, permits) needs.
 */
public class AcceptedAckFuture extends CompletableFuture<Void> {
    private final CompletableFuture<Void> applied = new CompletableFuture<>();

    public AcceptedAckFuture() {
        whenComplete((v, e) -> {
            if (e == null) {
                applied.complete(null);
            } else {
                applied.completeExceptionally(e);
            }
        });
    }

    /** The cursor applied the ack in memory; durability follows. */
    public void accepted() {
        applied.complete(null);
    }

    /** Completes when the ack is applied in memory, accepted or durable, whichever comes first. */
    public CompletableFuture<Void> applied() {
        return applied;
    }

    /** {@code ack}'s applied stage if it has one, else {@code ack} itself (it only completes when applied). */
    public static CompletableFuture<Void> appliedStage(CompletableFuture<Void> ack) {
        return ack instanceof AcceptedAckFuture accepted ? accepted.applied() : ack;
    }
}
