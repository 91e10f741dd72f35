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

import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import java.util.concurrent.ExecutionException;
import org.awaitility.core.ConditionTimeoutException;
import org.awaitility.core.TerminalFailureException;
import org.testng.annotations.Test;
import org.testng.internal.thread.ThreadTimeoutException;

public class UpstreamBugInverterTest {

    @Test
    public void aReproducerReproducesOnlyWithTheSymptomItAsserts() {
        assertTrue(UpstreamBugInverter.isSymptom(new AssertionError("delete(p5) reported durable, lost in a crash")));
        assertTrue(UpstreamBugInverter.isSymptom(new ConditionTimeoutException("never called back")));
        assertTrue(UpstreamBugInverter.isSymptom(new TerminalFailureException("left the source")));
        assertTrue(UpstreamBugInverter.isSymptom(new ThreadTimeoutException("didn't finish within the time-out")));

        assertFalse(UpstreamBugInverter.isSymptom(new NoSuchMethodError("getAcceptedNotDurableCount")));
        assertFalse(UpstreamBugInverter.isSymptom(new NoClassDefFoundError("AcceptedNotDurable")));
        assertFalse(UpstreamBugInverter.isSymptom(new NullPointerException()));
        assertFalse(UpstreamBugInverter.isSymptom(new ExecutionException(new IllegalStateException("set-up"))));
        assertFalse(UpstreamBugInverter.isSymptom(null));
    }
}
