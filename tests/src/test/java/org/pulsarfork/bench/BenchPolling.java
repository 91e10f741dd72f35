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
import org.awaitility.Awaitility;
import org.awaitility.pollinterval.PollInterval;
import org.testng.ISuite;
import org.testng.ISuiteListener;

/**
 * Awaitility's defaults for the bench runs: the first check at once, then checks 1 ms apart, doubling up to
 * Awaitility's own 100 ms. Its default waits 100 ms before the first check and between checks, so every wait for
 * a condition that holds within milliseconds cost at least 100 ms, hundreds of times per test class that waits
 * for each write or rewind in a loop. A bound ({@code atMost}) or a window ({@code during}) is unchanged, and a
 * condition that takes long is polled at the old rate after the first few checks. Upstream's own suites run
 * without this listener.
 */
public class BenchPolling implements ISuiteListener {
    static final Duration FIRST = Duration.ofMillis(1);
    static final Duration MAX = Duration.ofMillis(100);

    /** The interval before check {@code pollCount + 1}: doubling from {@link #FIRST}, at most {@link #MAX}. */
    static final PollInterval DOUBLING = (pollCount, previous) -> {
        if (previous == null || previous.compareTo(FIRST) < 0) {
            return FIRST;
        }
        Duration doubled = previous.multipliedBy(2);
        return doubled.compareTo(MAX) > 0 ? MAX : doubled;
    };

    @Override
    public void onStart(ISuite suite) {
        Awaitility.setDefaultPollDelay(Duration.ZERO);
        Awaitility.setDefaultPollInterval(DOUBLING);
    }
}
