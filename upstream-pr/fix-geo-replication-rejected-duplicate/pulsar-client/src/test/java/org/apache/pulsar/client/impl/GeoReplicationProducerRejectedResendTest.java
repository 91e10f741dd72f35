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
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import org.apache.pulsar.client.api.PulsarClientException;
import org.testng.annotations.Test;

/**
 * Reproducers of #26113 at the replication producer: each fails without the fix (the resend of a
 * message the remote rejected is completed as persisted on a -1/-1 receipt).
 */
public class GeoReplicationProducerRejectedResendTest extends GeoReplicationProducerReceiptTestBase {

    /** The report's timeline: a corrupted local buffer fails E3, the replicator rewinds and resends it (Case-1). */
    @Test(timeOut = 30_000)
    public void resendOfAMessageRejectedForItsChecksumIsUnconfirmed() {
        Send e3 = send(3, 103);
        Send e4 = send(4, 104);
        Send e5 = send(5, 105);
        localBufferIntact = false;
        producer.recoverChecksumError(cnx, 103);
        assertTrue(outcomeOf(e3) instanceof PulsarClientException.ChecksumException);
        receipt(4, 9, 0);
        receipt(5, 9, 1);
        assertTrue(e4.succeeded() && e5.succeeded());

        Send e3Again = send(3, 103);
        receipt(3, -1, -1);
        assertUnconfirmed(e3Again);
        assertEquals(pending(), 0);
        assertTrue(channel.isOpen());
    }

    /**
     * The non-corrupted checksum branch resends everything on the same connection; E4's receipt then
     * arrives while E3 is the head, the producer closes the connection, and after the reconnect the remote
     * answers E3 as a duplicate (Case-3). Legitimate duplicates of E4 and E5 stay successes.
     */
    @Test(timeOut = 30_000)
    public void checksumErrorOnTheWireThenReconnectLeavesTheRejectedMessageUnconfirmed() {
        Send e3 = send(3, 103);
        Send e4 = send(4, 104);
        Send e5 = send(5, 105);
        localBufferIntact = true;
        producer.recoverChecksumError(cnx, 103);
        receipt(4, 9, 0);
        assertFalse(channel.isOpen(), "an out-of-order receipt closes the connection");
        assertFalse(e3.outcome.isDone() || e4.outcome.isDone() || e5.outcome.isDone());

        receipt(3, -1, -1);
        assertUnconfirmed(e3);
        receipt(4, -1, -1);
        receipt(5, -1, -1);
        assertTrue(e4.succeeded() && e5.succeeded(), "a duplicate of a stored message stays a success");
        assertEquals(pending(), 0);
    }

    /** NotAllowedError (for example a topic-level max message size on the remote), then the limit is lifted. */
    @Test(timeOut = 30_000)
    public void resendOfAMessageRejectedAsNotAllowedIsUnconfirmed() {
        rejectE3AsNotAllowedAndStoreE4E5();

        Send e3Again = send(3, 103);
        receipt(3, -1, -1);
        assertUnconfirmed(e3Again);
    }

    /**
     * The replicator re-creates its producer (a disconnect) after the remote rejected E3 and stored E4 and
     * E5: the new producer's resend of E3 is answered -1/-1 and must not be a confirmation either.
     */
    @Test(timeOut = 30_000)
    public void aRecreatedProducerStillTreatsTheRejectedMessageAsUnconfirmed() {
        rejectE3AsNotAllowedAndStoreE4E5();

        producer = newProducer();
        Send e3Again = send(3, 103);
        receipt(3, -1, -1);
        assertUnconfirmed(e3Again);
    }

    /**
     * Case-1 completes an op already covered by the last persisted position on another message's receipt:
     * it must not be reported with that message's target position.
     */
    @Test(timeOut = 30_000)
    public void anOpCompletedOnAnotherMessagesReceiptCarriesNoTargetPosition() {
        send(4, 104);
        send(5, 105);
        receipt(4, 9, 0);
        receipt(5, 9, 1);
        Send e4Again = send(4, 104);
        Send e6 = send(6, 106);
        receipt(6, 9, 2);
        assertTrue(e4Again.succeeded() && e6.succeeded());
        assertEquals(e6.messageId, new MessageIdImpl(9, 2, -1));
        assertEquals(e4Again.messageId, new MessageIdImpl(-1, -1, -1), "not E6's target position");
    }

    /** A V1 remote's duplicate receipt for E3, which it refused, is unconfirmed. */
    @Test(timeOut = 30_000)
    public void aV1RemotesDuplicateReceiptForARejectedMessageIsUnconfirmed() {
        when(cnx.isBrokerSupportsReplDedupByLidAndEid()).thenReturn(false);
        Send e3 = send(3, 103);
        Send e4 = send(4, 104);
        Send e5 = send(5, 105);
        producer.recoverNotAllowedError(103, "Exceed maximum message size");
        assertTrue(outcomeOf(e3) instanceof PulsarClientException.NotAllowedException);
        v1Receipt(104, 9, 0);
        v1Receipt(105, 9, 1);
        assertTrue(e4.succeeded() && e5.succeeded());

        Send e3Again = send(3, 103);
        v1Receipt(103, -1, -1);
        assertUnconfirmed(e3Again);
        assertEquals(pending(), 0);
    }
}
