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

import static org.testng.Assert.assertEquals;
import org.testng.annotations.Test;

/**
 * #12522's order, kept by the fix of #26486: readers are served a new compacted ledger and horizon before the
 * compaction cursor's mark-delete lets the managed ledger trim the original data below it.
 */
public class CompactionHorizonOrderBenchTest extends CompactionCommitBenchBase {

    @Test(timeOut = 60_000)
    public void theNewHorizonIsServedBeforeTheCursorMoves() throws Exception {
        openCompactionSubscription();
        long first = compactedLedger();
        commit(p.get(3), first);
        awaitOutcome(0);

        assertEquals(horizonWhenIssued.get(0), p.get(3), "#12522: readers must be served the new horizon before"
                + " the compaction cursor's mark-delete lets the managed ledger trim the data below it");
        assertServed(p.get(3), first, "after the compaction cursor recorded it");
        assertDurable(recoverCompactionCursor(), p.get(3), first, "a crash");
    }
}
