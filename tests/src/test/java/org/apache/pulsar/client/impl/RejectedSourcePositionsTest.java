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

import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import org.testng.annotations.Test;

/** The record of rejected source positions, and the back-off of repeated unconfirmed reports. */
@Test(groups = FORK_ONLY)
public class RejectedSourcePositionsTest {

    public void aRealReceiptClearsTheRecordAndItsBackOff() {
        RejectedSourcePositions rejected = new RejectedSourcePositions();
        rejected.add(7, 3);
        assertTrue(rejected.contains(7, 3));
        assertFalse(rejected.contains(7, 4));
        assertEquals(rejected.nextReportDelayMillis(7, 3), 0);
        assertEquals(rejected.nextReportDelayMillis(7, 3), RejectedSourcePositions.FIRST_RETRY_DELAY_MILLIS);
        rejected.confirmed(7, 3);
        assertFalse(rejected.contains(7, 3));
        assertEquals(rejected.size(), 0);
        assertEquals(rejected.nextReportDelayMillis(7, 3), 0, "a new rejection starts over");
    }

    public void repeatedReportsBackOffUpToAMinute() {
        RejectedSourcePositions rejected = new RejectedSourcePositions();
        rejected.add(7, 3);
        long delay = rejected.nextReportDelayMillis(7, 3);
        assertEquals(delay, 0);
        long expected = RejectedSourcePositions.FIRST_RETRY_DELAY_MILLIS;
        for (int i = 0; i < 20; i++) {
            delay = rejected.nextReportDelayMillis(7, 3);
            assertEquals(delay, expected);
            expected = Math.min(expected * 2, RejectedSourcePositions.MAX_RETRY_DELAY_MILLIS);
        }
        assertEquals(delay, RejectedSourcePositions.MAX_RETRY_DELAY_MILLIS);
    }
}
