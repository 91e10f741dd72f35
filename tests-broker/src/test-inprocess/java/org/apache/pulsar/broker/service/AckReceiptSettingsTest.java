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

import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.testng.annotations.Test;

/** The setting ackReceiptWaitsForPersistence on its own: its values, and what a value it cannot honour does. */
@Test(groups = FORK_ONLY)
public class AckReceiptSettingsTest {
    private final List<String> errors = new ArrayList<>();

    private boolean parse(String value, boolean durableCompletion, AtomicBoolean reported) {
        return AckReceiptSettings.parse(value, durableCompletion, reported, errors::add);
    }

    public void trueAndFalseInAnyCaseAndUnsetMeanWhatTheySay() {
        errors.clear();
        AtomicBoolean reported = new AtomicBoolean();
        assertTrue(parse("true", true, reported));
        assertTrue(parse(" TRUE ", true, reported));
        assertFalse(parse("false", true, reported));
        assertFalse(parse(null, true, reported), "default false on 4.x: a drop-in changes no latency unasked");
        assertFalse(parse("", true, reported));
        assertEquals(errors, List.of());
    }

    public void aValueThatIsNeitherCountsAsFalseWithOneErrorThatNamesTheKey() {
        errors.clear();
        AtomicBoolean reported = new AtomicBoolean();
        assertFalse(parse("yes", true, reported));
        assertFalse(parse("yes", true, reported));
        assertEquals(errors.size(), 1, "one line per broker, not one per consumer: " + errors);
        assertTrue(errors.get(0).startsWith("ackReceiptWaitsForPersistence must be true or false, not 'yes'"),
                errors.get(0));
    }

    public void trueOverUpstreamsManagedLedgerCountsAsFalseWithAnError() {
        errors.clear();
        AtomicBoolean reported = new AtomicBoolean();
        assertFalse(parse("true", false, reported));
        assertEquals(errors.size(), 1);
        assertTrue(errors.get(0).contains("needs this fork's managed-ledger jar"), errors.get(0));
    }
}
