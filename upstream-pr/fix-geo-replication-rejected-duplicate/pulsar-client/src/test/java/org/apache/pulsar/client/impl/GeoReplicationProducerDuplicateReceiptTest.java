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

import static org.mockito.Mockito.when;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNotSame;
import static org.testng.Assert.assertSame;
import static org.testng.Assert.assertTrue;
import org.apache.pulsar.client.api.PulsarClientException;
import org.testng.annotations.Test;

/**
 * The replication producer's duplicate receipts with the fix: legitimate duplicates stay successes, a
 * rejected message's -1/-1 fails with {@link GeoReplicationUnconfirmedException} naming its source
 * position, and the record of rejected positions stays bounded.
 */
public class GeoReplicationProducerDuplicateReceiptTest extends GeoReplicationProducerReceiptTestBase {

    /** The unconfirmed resend names the source position the replicator must keep. */
    @Test(timeOut = 30_000)
    public void anUnconfirmedResendNamesItsSourcePosition() {
        rejectE3AsNotAllowedAndStoreE4E5();

        Send e3Again = send(3, 103);
        receipt(3, -1, -1);
        Throwable failure = assertUnconfirmed(e3Again);
        assertTrue(failure instanceof GeoReplicationUnconfirmedException, String.valueOf(failure));
        GeoReplicationUnconfirmedException unconfirmed = (GeoReplicationUnconfirmedException) failure;
        assertEquals(unconfirmed.getSourceLedgerId(), L);
        assertEquals(unconfirmed.getSourceEntryId(), 3);
    }

    /**
     * Bounded state: the record shared by the replicator's producers on this client
     * outlives a closed producer only while it holds a rejection.
     */
    @Test(timeOut = 30_000)
    public void aClosedProducersRecordIsKeptOnlyWhileItHoldsARejection() {
        String name = "pulsar.repl.r1-->r2";
        RejectedSourcePositions unused = RejectedSourcePositions.shared(client, TOPIC, name);
        producer.closeAsync();
        producer = newProducer();
        assertNotSame(RejectedSourcePositions.shared(client, TOPIC, name), unused, "an empty record is released");

        rejectE3AsNotAllowedAndStoreE4E5();
        RejectedSourcePositions holding = RejectedSourcePositions.shared(client, TOPIC, name);
        producer.closeAsync();
        producer = newProducer();
        assertSame(RejectedSourcePositions.shared(client, TOPIC, name), holding, "kept for the next producer");
        assertTrue(holding.contains(L, 3));
    }

    /** Controls on V1: a duplicate with no rejection is a success; a real receipt clears the rejection. */
    @Test(timeOut = 30_000)
    public void aV1RemotesDuplicatesOfStoredMessagesStaySuccesses() {
        when(cnx.isBrokerSupportsReplDedupByLidAndEid()).thenReturn(false);
        Send e3 = send(3, 103);
        v1Receipt(103, -1, -1);
        assertTrue(e3.succeeded(), "ack lost on reconnect after a real persist: the remote answers -1/-1");

        Send e4 = send(4, 104);
        producer.recoverNotAllowedError(104, "Exceed maximum message size");
        assertTrue(outcomeOf(e4) instanceof PulsarClientException.NotAllowedException);
        Send e4Again = send(4, 104);
        v1Receipt(104, 9, 0);
        assertTrue(e4Again.succeeded(), "stored on the second attempt");
        Send e4Third = send(4, 104);
        v1Receipt(104, -1, -1);
        assertTrue(e4Third.succeeded(), "a duplicate of a message the remote stored after all");
        assertEquals(pending(), 0);
    }

    /** Controls: without a rejection, -1/-1 is a legitimate duplicate, and a real receipt clears a rejection. */
    @Test(timeOut = 30_000)
    public void duplicatesOfStoredMessagesStaySuccesses() {
        Send e3 = send(3, 103);
        receipt(3, -1, -1);
        assertTrue(e3.succeeded(), "ack lost on reconnect after a real persist: the remote answers -1/-1");

        Send e4 = send(4, 104);
        localBufferIntact = false;
        producer.recoverChecksumError(cnx, 104);
        assertTrue(outcomeOf(e4) instanceof PulsarClientException.ChecksumException);
        Send e4Again = send(4, 104);
        receipt(4, 9, 0);
        assertTrue(e4Again.succeeded(), "stored on the second attempt");
        Send e4Third = send(4, 104);
        receipt(4, -1, -1);
        assertTrue(e4Third.succeeded(), "a duplicate of a message the remote stored after all");
        assertEquals(pending(), 0);
    }
}
