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
package com.google.common.util.concurrent;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A mark-delete rate limiter that never grants a permit, and whose first {@link #tryAcquire()} waits
 * until the test releases it: it stops the acking thread at the limiter's decision, the point between
 * applying an ack and recording it as throttled. Lives in Guava's package for RateLimiter's
 * package-private constructor.
 */
public final class GatedRateLimiter extends RateLimiter {
    private final double rate;
    private final AtomicBoolean armed = new AtomicBoolean(true);
    public final CompletableFuture<Thread> entered = new CompletableFuture<>();
    public final CompletableFuture<Void> release = new CompletableFuture<>();

    public GatedRateLimiter(double rate) {
        super(SleepingStopwatch.createFromSystemTimer());
        this.rate = rate;
    }

    @Override
    public boolean tryAcquire() {
        if (armed.compareAndSet(true, false)) {
            entered.complete(Thread.currentThread());
            release.join();
        }
        return false;
    }

    @Override
    void doSetRate(double permitsPerSecond, long nowMicros) {
    }

    @Override
    double doGetRate() {
        return rate;
    }

    @Override
    long queryEarliestAvailable(long nowMicros) {
        return Long.MAX_VALUE;
    }

    @Override
    long reserveEarliestAvailable(int permits, long nowMicros) {
        return Long.MAX_VALUE;
    }
}
