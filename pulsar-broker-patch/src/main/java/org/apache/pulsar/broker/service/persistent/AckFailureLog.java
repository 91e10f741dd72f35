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

import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * At most one line per subscription and period for acks whose cursor write failed, with the count of those since
 * the line before: a cursor whose ledger another broker fenced fails every ack it holds at once, and a line per
 * ack buried the broker's log (hundreds of lines in a second). The line itself is the subscription's, in the
 * logging style of its line.
 */
final class AckFailureLog {
    static final long PERIOD_NANOS = TimeUnit.SECONDS.toNanos(10);

    /** Logs one failure, and how many failed since the line before without a line of their own. */
    interface Line {
        void log(Object position, Throwable cause, long notLoggedBefore, long periodSeconds);
    }

    private final Line line;
    private final LongSupplier nanoClock;
    private boolean loggedOnce;
    private long lastLineNanos;
    private long notLogged;

    AckFailureLog(Line line, LongSupplier nanoClock) {
        this.line = line;
        this.nanoClock = nanoClock;
    }

    void failed(Object position, Throwable cause) {
        long notLoggedBefore;
        synchronized (this) {
            long now = nanoClock.getAsLong();
            if (loggedOnce && now - lastLineNanos < PERIOD_NANOS) {
                notLogged++;
                return;
            }
            loggedOnce = true;
            lastLineNanos = now;
            notLoggedBefore = notLogged;
            notLogged = 0;
        }
        line.log(position, cause, notLoggedBefore, TimeUnit.NANOSECONDS.toSeconds(PERIOD_NANOS));
    }
}
