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
package org.pulsarfork.bench;

import java.time.Duration;

/**
 * The bounds the replication backoff keeps while a remote refuses a message, stated in docs/geo-replication.md for
 * the first minute (12 rewinds, 40 log lines naming the topic, 7 to 10 resends) and derived from the resends due in
 * any window, so that a shorter refusal is held to the same rule.
 */
public final class RefusalBounds {
    private static final long FIRST_DELAY_MILLIS = 100;

    private final int resends;

    private RefusalBounds(Duration window) {
        // Below the 60 s cap of the delay: the first delay at the cap comes 102.3 s after the first refusal.
        if (window.toMillis() > 102_300) {
            throw new IllegalArgumentException("the rule holds for windows up to 102.3 s: " + window);
        }
        // Resend k is due 100 ms * (2^k - 1) after the first refusal (100 ms doubling; the cap is past a minute).
        int k = 0;
        while (FIRST_DELAY_MILLIS * ((1L << (k + 1)) - 1) <= window.toMillis()) {
            k++;
        }
        this.resends = k;
    }

    public static RefusalBounds within(Duration window) {
        return new RefusalBounds(window);
    }

    /** The backoff's resends due in the window: 9 in a minute, 8 in 30 s. */
    public int resends() {
        return resends;
    }

    // The first refusal's rewind, one per send in flight behind it in the first round, and timing slack.
    public int maxRewinds() {
        return resends + 3;
    }

    // Each refused resend rewinds the replicator cursor; three of slack: a count that finds no rewinds fails.
    public int minRewinds() {
        return resends - 3;
    }

    // Per resend the cursor's rewind INFO and the client's send-error WARN, plus the held WARN and a summary
    // (2k + 2), doubled for lines a refusal may add on some line (a reconnect, the record of a fence's refusal).
    public int maxLogLines() {
        return 4 * resends + 4;
    }

    // The resends scheduled so far, the next one included.
    public int minAttempts() {
        return resends - 2;
    }

    public int maxAttempts() {
        return resends + 1;
    }
}
