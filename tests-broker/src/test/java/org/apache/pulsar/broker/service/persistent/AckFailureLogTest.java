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

import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.testng.Assert.assertEquals;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/** The failed-ack log on its own: a manual clock, the lines it asks for recorded. */
@Test(groups = FORK_ONLY)
public class AckFailureLogTest {
    private AtomicLong now;
    private List<String> lines;
    private AckFailureLog log;

    @BeforeMethod
    public void newLog() {
        now = new AtomicLong(TimeUnit.HOURS.toNanos(1));
        lines = new ArrayList<>();
        log = new AckFailureLog((position, cause, notLoggedBefore, periodSeconds) -> lines.add(position + " "
                + cause.getMessage() + " +" + notLoggedBefore + " /" + periodSeconds + "s"), now::get);
    }

    public void aFencedCursorsHeldAcksMakeOneLineAPeriodWithTheirCount() {
        for (int i = 1; i <= 400; i++) {
            log.failed("3:" + i, new IllegalStateException("fenced"));
        }
        assertEquals(lines, List.of("3:1 fenced +0 /10s"), "400 failures at once: one line");

        now.addAndGet(AckFailureLog.PERIOD_NANOS - 1);
        log.failed("3:401", new IllegalStateException("fenced"));
        assertEquals(lines.size(), 1, "still within the period");

        now.addAndGet(1);
        log.failed("3:402", new IllegalStateException("closed"));
        assertEquals(lines, List.of("3:1 fenced +0 /10s", "3:402 closed +400 /10s"),
                "the next period's first failure, with the 400 not logged since the line before");
    }

    public void aFailureAfterAQuietPeriodIsLoggedAtOnce() {
        log.failed("3:1", new IllegalStateException("a"));
        now.addAndGet(TimeUnit.MINUTES.toNanos(5));
        log.failed("3:2", new IllegalStateException("b"));
        assertEquals(lines, List.of("3:1 a +0 /10s", "3:2 b +0 /10s"));
    }
}
